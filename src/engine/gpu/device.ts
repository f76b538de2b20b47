/**
 * Acquiring a WebGPU device with the limits a model needs, and describing
 * the adapter to the user. Fallback (CPU) adapters are accepted: they are how
 * LegoKV runs on machines without a usable GPU, and how CI runs.
 */
export interface AdapterSummary {
  description: string;
  vendor: string;
  architecture: string;
  isFallback: boolean;
  hasF16: boolean;
  hasTimestamps: boolean;
  /** Whether the adapter offers `subgroups` (the engine then enables it, for gemv_sg). */
  hasSubgroups: boolean;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}

export interface GpuContext {
  device: GPUDevice;
  adapter: AdapterSummary;
  /** 'cpu' adapters want register tiling without barriers; 'gpu' ones shared-memory tiles. */
  profile: 'cpu' | 'gpu';
  /** Forces decode's fused launches on or off (Ops.fuse); unset, the profile decides. */
  fuse?: boolean;
  /** Resolves when the device is lost; the message says why. */
  lost: Promise<string>;
  /** Every feature the adapter offers (the device enables only those the engine uses). */
  adapterFeatures: string[];
}

export class NoWebGPUError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoWebGPUError';
  }
}

export function describeAdapter(adapter: GPUAdapter): AdapterSummary {
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  const isFallback =
    (info as (GPUAdapterInfo & { isFallbackAdapter?: boolean }) | undefined)?.isFallbackAdapter ??
    (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter ??
    false;
  const description =
    [info?.description, info?.vendor, info?.architecture, info?.device].filter((s) => s).join(' / ') ||
    'unknown adapter';
  return {
    description,
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    isFallback: isFallback || /swiftshader|llvmpipe|lavapipe/i.test(description),
    hasF16: adapter.features.has('shader-f16'),
    hasTimestamps: adapter.features.has('timestamp-query'),
    hasSubgroups: adapter.features.has('subgroups'),
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
  };
}

export async function createGpuContext(gpu: GPU | undefined, opts: { featureLevel?: string } = {}): Promise<GpuContext> {
  if (!gpu) {
    throw new NoWebGPUError(
      'This browser does not expose WebGPU (navigator.gpu is missing). Use a recent Chrome or Edge; ' +
        'on Linux start Chrome with --enable-unsafe-webgpu, or enable chrome://flags/#enable-unsafe-webgpu.',
    );
  }
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance', ...opts } as GPURequestAdapterOptions);
  if (!adapter) {
    throw new NoWebGPUError(
      'WebGPU is present but no adapter is available (often a blocklisted GPU or driver). ' +
        'In Chrome try chrome://flags/#enable-unsafe-webgpu, or start it with --enable-unsafe-webgpu.',
    );
  }
  const summary = describeAdapter(adapter);
  const L = adapter.limits;
  const requiredLimits: Record<string, number> = {
    maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
    maxBufferSize: L.maxBufferSize,
    maxStorageBuffersPerShaderStage: Math.min(L.maxStorageBuffersPerShaderStage, 10),
    maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: L.maxComputeWorkgroupSizeX,
    maxComputeWorkgroupSizeY: L.maxComputeWorkgroupSizeY,
  };
  const requiredFeatures: GPUFeatureName[] = [];
  if (summary.hasTimestamps) requiredFeatures.push('timestamp-query');
  if (summary.hasSubgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
  // For the tiled matmuls' f16 slices (kernels/matmul_half.wgsl): Metal and D3D12 GPUs offer it; Dawn on NVIDIA's Vulkan does not.
  if (summary.hasF16) requiredFeatures.push('shader-f16');
  const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  const lost = device.lost.then((info) => `${info.reason ?? 'unknown'}: ${info.message}`);
  return { device, adapter: summary, profile: summary.isFallback ? 'cpu' : 'gpu', lost, adapterFeatures: [...adapter.features].sort() };
}
