/** Registers every format loader with load.ts; import once where models are loaded (worker, Node). */
import { registerFormat } from './load';
import { loadHfModel } from './hf';

registerFormat('hf', async (files, name) => ({ format: 'hf', ...(await loadHfModel(files, { name })) }));
