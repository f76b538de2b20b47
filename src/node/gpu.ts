/**
 * WebGPU in Node through the `webgpu` package (Dawn), for the CLI, the
 * benchmarks and the kernel tests. On machines without a GPU it runs on
 * Chromium's SwiftShader Vulkan driver, found next to Debian's chromium, or,
 * with LEGOKV_NODE_BACKEND=opengles, on Mesa's llvmpipe through OpenGL ES, or,
 * with LEGOKV_NODE_BACKEND=lavapipe, on Mesa's lavapipe through Vulkan: the
 * one adapter in reach with `shader-f16` (scripts/fetch-lavapipe.mjs).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGpuContext, NoWebGPUError, type GpuContext, type KernelSources } from '../engine';
import { throttleDawnPolling } from './dawn-poll';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function loadKernelSources(dir = join(root, 'kernels')): KernelSources {
  const out: KernelSources = {};
  for (const f of readdirSync(dir)) if (f.endsWith('.wgsl')) out[f.slice(0, -5)] = readFileSync(join(dir, f), 'utf8');
  return out;
}

const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';

/**
 * On SwiftShader, workgroup memory is zero-initialised (as WebGPU requires) by Tint's code in the shader instead of
 * the Vulkan extension SwiftShader offers for it: SwiftShader compiles the extension's initialisation value by
 * value, 3 s for a 32 KiB array against 7 ms (a staged gemv, attention_tiled's tiles), which was most of some
 * kernel tests' time. Same result: gemv_sg's counter, for one, counts from the zero either way gives it.
 */
const SWIFTSHADER_ZERO_INIT = 'disable-dawn-features=use_vulkan_zero_initialize_workgroup_memory_extension';
/** Whether the Vulkan loader is pointed at SwiftShader (as createNodeGpu points it by default, and gpu-env.mjs does). */
const onSwiftShader = () => /swiftshader/i.test(process.env.VK_ICD_FILENAMES ?? '');

export interface NodeGpu extends GpuContext {
  release(): void;
}

/** LEGOKV_FUSE=on|off forces decode's fused launches (Ops.fuse) either way, for the parity tests; unset, the adapter's profile decides. */
export function fuseOverride(): boolean | undefined {
  const v = process.env.LEGOKV_FUSE;
  if (v === undefined || v === '') return undefined;
  if (v !== 'on' && v !== 'off') throw new Error(`LEGOKV_FUSE must be on or off, not ${JSON.stringify(v)}`);
  return v === 'on';
}

const BACKENDS = ['vulkan', 'opengles', 'lavapipe'] as const;

/**
 * Which Dawn backend: Vulkan (SwiftShader without a GPU) by default; OpenGL ES
 * with LEGOKV_NODE_BACKEND=opengles, which on a machine without a GPU is Mesa's
 * llvmpipe at WebGPU's compatibility feature level; or Vulkan on Mesa's
 * lavapipe with LEGOKV_NODE_BACKEND=lavapipe.
 */
export function nodeBackend(): (typeof BACKENDS)[number] {
  const b = process.env.LEGOKV_NODE_BACKEND ?? 'vulkan';
  if (!(BACKENDS as readonly string[]).includes(b)) throw new Error(`LEGOKV_NODE_BACKEND must be ${BACKENDS.join(', ')}, not ${JSON.stringify(b)}`);
  return b as (typeof BACKENDS)[number];
}

/**
 * Dawn toggles to enable (`enable-dawn-features`), from `opts.enable` and LEGOKV_DAWN_ENABLE (comma-separated):
 * the GPU kit asks for `vulkan_enable_f16_on_nvidia`, without which Dawn offers no `shader-f16` on NVIDIA's Vulkan
 * driver (blocklisted for driver bugs, crbug.com/42251215), to check and time the f16 path there.
 */
function dawnToggles(enable: string[] = []): string[] {
  const all = [...enable, ...(process.env.LEGOKV_DAWN_ENABLE ?? '').split(',')].map((t) => t.trim()).filter(Boolean);
  for (const t of all) if (!/^[a-z0-9_]+$/.test(t)) throw new Error(`Dawn toggle names are lower_snake_case, not ${JSON.stringify(t)}`);
  return all.length ? [`enable-dawn-features=${[...new Set(all)].join(',')}`] : [];
}

export async function createNodeGpu(opts: { enable?: string[] } = {}): Promise<NodeGpu> {
  const backend = nodeBackend();
  if (backend === 'opengles') process.env.EGL_PLATFORM ??= 'surfaceless';
  else if (backend === 'lavapipe') {
    if (!existsSync(LAVAPIPE_ICD)) throw new NoWebGPUError('LEGOKV_NODE_BACKEND=lavapipe needs Mesa\'s lavapipe: run node scripts/fetch-lavapipe.mjs (npm test does).');
    process.env.VK_ICD_FILENAMES = LAVAPIPE_ICD;
  } else if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES && existsSync(SWIFTSHADER) && !process.env.LEGOKV_NATIVE_VULKAN) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER;
  }
  // LEGOKV_WEBGPU_MODULE: the `webgpu` package's index.js at another path (the GPU kit unpacks its own copy).
  const webgpu = (await import(process.env.LEGOKV_WEBGPU_MODULE ?? 'webgpu')) as typeof import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  let gpu: GPU | null = webgpu.create([...(backend === 'opengles' ? ['backend=opengles'] : onSwiftShader() ? [SWIFTSHADER_ZERO_INIT] : []), ...dawnToggles(opts.enable)]);
  let ctx: GpuContext;
  try {
    ctx = await createGpuContext(gpu, backend === 'opengles' ? { featureLevel: 'compatibility' } : {});
  } catch (e) {
    if (backend !== 'opengles' || !(e instanceof NoWebGPUError)) throw e;
    throw new NoWebGPUError(
      'LEGOKV_NODE_BACKEND=opengles found no OpenGL ES adapter. It needs Mesa\'s EGL (Debian: libegl1 libegl-mesa0 ' +
        'libgl1-mesa-dri libgles2), and chromium\'s ANGLE libEGL must not be on LD_LIBRARY_PATH (scripts/gpu-env.mjs leaves it off).',
    );
  }
  // On a CPU adapter Dawn's busy wait competes with the adapter's own threads (dawn-poll.ts); LEGOKV_DAWN_POLL=spin keeps it.
  if (ctx.profile === 'cpu' && process.env.LEGOKV_DAWN_POLL !== 'spin') throttleDawnPolling();
  return {
    ...ctx,
    fuse: fuseOverride(),
    release() {
      ctx.device.destroy();
      gpu = null;
    },
  };
}
