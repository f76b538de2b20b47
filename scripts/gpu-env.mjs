#!/usr/bin/env node
// Runs a TypeScript entry point under tsx with WebGPU-in-Node ready: where
// there is no system Vulkan loader, use the one and the SwiftShader driver
// that Debian's chromium ships; with LEGOKV_NODE_BACKEND=opengles, leave
// chromium's ANGLE libEGL out so that Dawn finds Mesa's (llvmpipe); with
// LEGOKV_NODE_BACKEND=lavapipe, point the loader at the lavapipe driver that
// scripts/fetch-lavapipe.mjs unpacked (the adapter with `shader-f16`).
// Usage: node scripts/gpu-env.mjs <file.ts> [args]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The ICD manifest scripts/fetch-lavapipe.mjs writes. */
export const LAVAPIPE_ICD = fileURLToPath(new URL('../.cache/lavapipe/lvp_icd.json', import.meta.url));

/** Debian's chromium (or $LEGOKV_CHROMIUM) and the flags it needs for WebGPU headless (ENVIRONMENT.md). */
export const chromiumPath = () => process.env.LEGOKV_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--disable-quic',
];

export function gpuEnv(base = process.env) {
  const env = { ...base };
  const chromiumDir = '/usr/lib/chromium';
  // The OpenGL ES backend needs the system's (Mesa) libEGL, not the ANGLE one next to chromium
  // (EGL_PLATFORM is set by src/node/gpu.ts itself, before Dawn loads).
  if (env.LEGOKV_NODE_BACKEND === 'opengles') {
    const path = (env.LD_LIBRARY_PATH ?? '').split(':').filter((p) => p && p !== chromiumDir);
    if (path.length) env.LD_LIBRARY_PATH = path.join(':');
    else delete env.LD_LIBRARY_PATH;
    return env;
  }
  // lavapipe needs only a Vulkan loader: chromium's, unless the system has one.
  if (env.LEGOKV_NODE_BACKEND === 'lavapipe') {
    env.VK_ICD_FILENAMES = LAVAPIPE_ICD;
    if (existsSync(`${chromiumDir}/libvulkan.so.1`)) env.LD_LIBRARY_PATH = [env.LD_LIBRARY_PATH, chromiumDir].filter(Boolean).join(':');
    return env;
  }
  if (existsSync(`${chromiumDir}/libvk_swiftshader.so`) && !env.LEGOKV_NATIVE_VULKAN) {
    env.VK_ICD_FILENAMES ??= `${chromiumDir}/vk_swiftshader_icd.json`;
    env.LD_LIBRARY_PATH = [env.LD_LIBRARY_PATH, chromiumDir].filter(Boolean).join(':');
  }
  return env;
}

// Run as a command only when this very file is the entry (not when bundled into another, as in the GPU kit).
if (import.meta.url.endsWith('/gpu-env.mjs') && import.meta.url === `file://${process.argv[1]}`) {
  const [, , ...args] = process.argv;
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: 'inherit', env: gpuEnv() });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(signal ? 130 : (code ?? 1)));
}
