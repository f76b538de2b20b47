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
import { loadHfModel } from './hf';
import { loadGguf } from './gguf-model';
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
  return LOADERS[detectFormat(files.names())](files, name);
}

async function loadHfFiles(files: ModelFiles, name: string): Promise<LoadedModel> {
  return { format: 'hf', ...(await loadHfModel(files, { name })) };
}

async function loadGgufFiles(files: ModelFiles): Promise<LoadedModel> {
  const names = files.names().filter((n) => n.endsWith('.gguf'));
  if (names.length !== 1) throw new ModelFormatError(`Expected one .gguf file, found ${names.length}: ${names.join(', ')}`);
  const src = await files.get(names[0]);
  if (!src) throw new ModelFormatError(`${names[0]} could not be opened`);
  const m = await loadGguf(src, { dtype: 'f16' });
  return { format: 'gguf', config: m.config, weights: m.weights, tokenizer: m.tokenizer };
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

/** Every format's loader, by the format detectFormat names: a fixed table, so no import order decides what loads. */
const LOADERS: Record<LoadedModel['format'], FormatLoader> = { hf: loadHfFiles, gguf: loadGgufFiles, llama2c: loadLlama2cFiles };
