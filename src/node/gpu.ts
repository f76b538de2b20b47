/**
 * WebGPU in Node through the `webgpu` package (Dawn), for the CLI, the
 * benchmarks and the kernel tests. On machines without a GPU it runs on
 * Chromium's SwiftShader Vulkan driver, found next to Debian's chromium.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGpuContext, type GpuContext } from '../engine/gpu/device';
import type { KernelSources } from '../engine/gpu/kernels';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function loadKernelSources(dir = join(root, 'kernels')): KernelSources {
  const out: KernelSources = {};
  for (const f of readdirSync(dir)) if (f.endsWith('.wgsl')) out[f.slice(0, -5)] = readFileSync(join(dir, f), 'utf8');
  return out;
}

const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';

export interface NodeGpu extends GpuContext {
  release(): void;
}

export async function createNodeGpu(): Promise<NodeGpu> {
  if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES && existsSync(SWIFTSHADER) && !process.env.LEGOKV_NATIVE_VULKAN) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER;
  }
  const webgpu = await import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  let gpu: GPU | null = webgpu.create([]);
  const ctx = await createGpuContext(gpu);
  return {
    ...ctx,
    release() {
      ctx.device.destroy();
      gpu = null;
    },
  };
}
