/**
 * The GPU kit's copy stage: the adapter's copy bandwidth (the decode roofline's), the host's upload bandwidth both
 * ways a link uploads (upload.ts), and what a launch costs apart from its work (dispatch.ts).
 */
import type { NodeGpu } from '../node/gpu';
import { loadKernelSources } from '../node/gpu';
import { Engine } from '../engine';
import { copyBandwidth, mappedUploadBandwidth, uploadBandwidth, type UploadTiming } from './upload';
import { dispatchCosts, formatDispatchCosts, type DispatchCost } from './dispatch';

export interface CopyReport {
  adapter: string;
  gbytes_per_s: number;
  counts: 'bytes read + bytes written';
  upload: UploadTiming[];
  upload_mapped: UploadTiming;
  /** Each case's cost of a launch, or why it could not be measured (which fails the kit's run). */
  dispatch: DispatchCost[] | { error: string };
}

export async function copyStage(gpu: NodeGpu, log: (line: string) => void): Promise<CopyReport> {
  const adapter = gpu.adapter.description, cpu = gpu.adapter.isFallback;
  const copyGBps = await copyBandwidth(gpu.device, cpu);
  // A SmolLM2 chunk's layer of 512 rows (kvDim 192, f32) as the link uploads it, and 4 MiB blocks.
  const upload = await uploadBandwidth(gpu.device, [512 * 192 * 4, 4 << 20], cpu ? 64 << 20 : 1 << 30);
  // And through mapped staging buffers reused, in a 32K link's layer of halves (32768 rows of 384 bytes).
  const mapped = await mappedUploadBandwidth(gpu.device, cpu ? 4 << 20 : 12 << 20, cpu ? 64 << 20 : 1 << 30);
  log(`copy bandwidth: ${copyGBps.toFixed(0)} GB/s; upload (writeBuffer) ${upload.map((u) => `${(u.block / 1024).toFixed(0)} KiB blocks ${u.gbytes_per_s.toFixed(1)} GB/s`).join(', ')}; mapped staging ${(mapped.block / 2 ** 20).toFixed(0)} MiB blocks ${mapped.gbytes_per_s.toFixed(1)} GB/s`);
  // Decode's step on a GPU is mostly launches: what one costs, through the engine's own dispatcher.
  const e = Engine.create(gpu, loadKernelSources());
  let dispatch: CopyReport['dispatch'];
  try {
    dispatch = await dispatchCosts(e);
    log(formatDispatchCosts(adapter, dispatch));
  } catch (err) {
    dispatch = { error: String((err as Error)?.stack ?? err) };
  } finally {
    e.destroy();
  }
  return { adapter, gbytes_per_s: copyGBps, counts: 'bytes read + bytes written', upload, upload_mapped: mapped, dispatch };
}
