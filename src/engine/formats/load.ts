/**
 * Loading any supported model from a set of files, whatever holds them
 * (a dropped folder, OPFS, Node's file system): the format is recognised
 * from the file names, then handed to its loader.
 *
 * | format | files |
 * | --- | --- |
 * | Hugging Face folder | config.json, *.safetensors (+ index), tokenizer.json, tokenizer_config.json |
 * | GGUF | one *.gguf (tokenizer embedded) |
 * | llama2.c | model *.bin and tokenizer *.bin |
 */
import type { ModelConfig } from '../model/config';
import type { HostWeights } from '../model/weights';
import type { Tokenizer } from '../tokenizer/types';
import { Llama2cTokenizer } from '../tokenizer/llama2c';
import { loadLlama2c } from './llama2c';
import { ModelFormatError, type ByteSource } from './source';

export interface ModelFiles {
  /** File names relative to the model's folder. */
  names(): string[];
  get(name: string): Promise<ByteSource | undefined>;
}

export interface LoadedModel {
  format: 'hf' | 'gguf' | 'llama2c';
  config: ModelConfig;
  weights: HostWeights;
  tokenizer: Tokenizer;
}

export type FormatLoader = (files: ModelFiles, name: string) => Promise<LoadedModel>;

/** Loaders of the formats that live in their own modules register here (keeps this file small). */
const loaders: Partial<Record<'hf' | 'gguf', FormatLoader>> = {};
export function registerFormat(format: 'hf' | 'gguf', loader: FormatLoader) {
  loaders[format] = loader;
}

export function detectFormat(names: string[]): LoadedModel['format'] {
  if (names.includes('config.json')) return 'hf';
  if (names.some((n) => n.endsWith('.gguf'))) return 'gguf';
  if (names.filter((n) => n.endsWith('.bin')).length >= 1) return 'llama2c';
  throw new ModelFormatError(
    `No model recognised among: ${names.join(', ') || '(no files)'}. Expected a Hugging Face folder (config.json + ` +
      '*.safetensors), a .gguf file, or a llama2.c .bin checkpoint with its tokenizer .bin.',
  );
}

export async function loadModelFiles(files: ModelFiles, name: string): Promise<LoadedModel> {
  const format = detectFormat(files.names());
  if (format === 'llama2c') return loadLlama2cFiles(files, name);
  const loader = loaders[format];
  if (!loader) throw new ModelFormatError(`The ${format} loader is not available in this build`);
  return loader(files, name);
}

async function loadLlama2cFiles(files: ModelFiles, name: string): Promise<LoadedModel> {
  const bins = files.names().filter((n) => n.endsWith('.bin'));
  const sources = (await Promise.all(bins.map((n) => files.get(n)))).filter((s): s is ByteSource => !!s);
  sources.sort((a, b) => b.size - a.size);
  if (sources.length < 2) {
    throw new ModelFormatError(`A llama2.c model needs its tokenizer .bin next to it (found only ${bins.join(', ')})`);
  }
  const [model, tok] = sources;
  const { config, weights } = await loadLlama2c(model, name);
  const tokenizer = await Llama2cTokenizer.load(tok, config.vocabSize);
  return { format: 'llama2c', config, weights, tokenizer };
}
