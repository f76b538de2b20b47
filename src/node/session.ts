/** Loading a model onto a Node WebGPU device: shared by the CLI, benchmarks and tests. */
import { Engine, loadModelFiles, type DecodeTuning, type LoadOptions, type LoadedModel, type PrefillTuning, type UploadTuning } from '../engine';
import { createNodeGpu, loadKernelSources, type NodeGpu } from './gpu';
import { nodeModelFiles } from './files';
import { basename } from 'node:path';

export interface NodeSession {
  gpu: NodeGpu;
  engine: Engine;
  model: LoadedModel;
  /** Decode's kernels as timed at load on a real GPU, as the app does (Engine.tuneDecode); null on CPU adapters. */
  tuning: DecodeTuning | null;
  /** How a link's host rows go up, as timed at load on a real GPU (Engine.tuneUpload); null on CPU adapters. */
  uploadTuning: UploadTuning | null;
  /** Prefill's attention kernel as timed at load on a real GPU (Engine.tunePrefill); null on CPU adapters. */
  prefillTuning: PrefillTuning | null;
  close(): void;
}

export async function openModel(path: string, opts: LoadOptions & { tokenizer?: string } = {}): Promise<NodeSession> {
  const model = await loadModelFiles(nodeModelFiles(path, opts.tokenizer), basename(path));
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  await engine.load(model.config, model.weights, opts);
  const tuning = await engine.tuneDecode();
  const uploadTuning = await engine.tuneUpload();
  const prefillTuning = await engine.tunePrefill();
  return {
    gpu,
    engine,
    model,
    tuning,
    uploadTuning,
    prefillTuning,
    close() {
      engine.destroy();
      gpu.release();
    },
  };
}
