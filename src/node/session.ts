/** Loading a model onto a Node WebGPU device: shared by the CLI, benchmarks and tests. */
import { Engine, loadModelFiles, type DecodeTuning, type LoadOptions, type LoadedModel } from '../engine';
import { createNodeGpu, loadKernelSources, type NodeGpu } from './gpu';
import { nodeModelFiles } from './files';
import { basename } from 'node:path';

export interface NodeSession {
  gpu: NodeGpu;
  engine: Engine;
  model: LoadedModel;
  /** Decode's kernels as timed at load on a real GPU, as the app does (Engine.tuneDecode); null on CPU adapters. */
  tuning: DecodeTuning | null;
  close(): void;
}

export async function openModel(path: string, opts: LoadOptions & { tokenizer?: string } = {}): Promise<NodeSession> {
  const model = await loadModelFiles(nodeModelFiles(path, opts.tokenizer), basename(path));
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  await engine.load(model.config, model.weights, opts);
  const tuning = await engine.tuneDecode();
  return {
    gpu,
    engine,
    model,
    tuning,
    close() {
      engine.destroy();
      gpu.release();
    },
  };
}
