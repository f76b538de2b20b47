/** Registers every format loader with load.ts; import once where models are loaded (worker, Node). */
import { registerFormat } from './load';
import { loadHfModel } from './hf';
import { loadGguf } from './gguf-model';
import { ModelFormatError } from './source';

registerFormat('hf', async (files, name) => ({ format: 'hf', ...(await loadHfModel(files, { name })) }));

registerFormat('gguf', async (files) => {
  const names = files.names().filter((n) => n.endsWith('.gguf'));
  if (names.length !== 1) throw new ModelFormatError(`Expected one .gguf file, found ${names.length}: ${names.join(', ')}`);
  const src = await files.get(names[0]);
  if (!src) throw new ModelFormatError(`${names[0]} could not be opened`);
  const m = await loadGguf(src, { dtype: 'f16' });
  return { format: 'gguf', config: m.config, weights: m.weights, tokenizer: m.tokenizer };
});
