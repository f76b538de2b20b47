/** Loading a model onto a Node WebGPU device: shared by the CLI, benchmarks and tests. */
import { Engine, loadModelFiles, type LoadOptions, type LoadedModel } from '../engine';
import { createNodeGpu, loadKernelSources, type NodeGpu } from './gpu';
import { nodeModelFiles } from './files';
import { basename } from 'node:path';

export interface NodeSession {
  gpu: NodeGpu;
  engine: Engine;
  model: LoadedModel;
  close(): void;
}

export async function openModel(path: string, opts: LoadOptions & { tokenizer?: string } = {}): Promise<NodeSession> {
  const model = await loadModelFiles(nodeModelFiles(path, opts.tokenizer), basename(path));
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  await engine.load(model.config, model.weights, opts);
  return {
    gpu,
    engine,
    model,
    close() {
      engine.destroy();
      gpu.release();
    },
  };
}
