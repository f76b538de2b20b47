/**
 * Tokenizer over @huggingface/transformers (transformers.js), built from the
 * parsed tokenizer.json and tokenizer_config.json objects: no network, no file
 * paths, so it works the same in Node and in a browser bundle. The library is
 * imported lazily so bundles that never tokenize with it stay small.
 */
import type { ChatMessage, Tokenizer } from './types';
import type { FolderFiles } from '../formats/safetensors';
import { readJson } from '../formats/safetensors';
import { ModelFormatError } from '../formats/source';

/** The parts of transformers.js' PreTrainedTokenizer this wrapper uses. */
interface TjsTokenizer {
  encode(text: string, opts: { add_special_tokens: boolean }): number[];
  decode(ids: number[], opts: { skip_special_tokens: boolean }): string;
  apply_chat_template(
    messages: ChatMessage[],
    opts: { tokenize: false; add_generation_prompt: boolean },
  ): string;
  chat_template: unknown;
  bos_token_id?: number | null;
  eos_token_id?: number | null;
  model: { vocab: unknown[] };
  added_tokens: { id: number }[];
}
type TjsTokenizerClass = new (tokenizerJson: unknown, tokenizerConfig: unknown) => TjsTokenizer;

export interface HfTokenizerOptions {
  /** Extra end-of-sequence ids (e.g. from the model's config.json / generation_config.json). */
  eosIds?: readonly number[];
}

export interface HfTokenizer extends Tokenizer {
  /** Whether the tokenizer's own post-processor prepends BOS (Llama 3, Gemma) or not (SmolLM2, Qwen2). */
  readonly usesBos: boolean;
}

/** Builds a Tokenizer from the parsed tokenizer.json and tokenizer_config.json. */
export async function createHfTokenizer(
  tokenizerJson: unknown,
  tokenizerConfig: unknown,
  opts: HfTokenizerOptions = {},
): Promise<HfTokenizer> {
  if (typeof tokenizerJson !== 'object' || tokenizerJson === null) {
    throw new ModelFormatError('tokenizer.json is not a JSON object');
  }
  const config = (typeof tokenizerConfig === 'object' && tokenizerConfig !== null ? tokenizerConfig : {}) as {
    tokenizer_class?: unknown;
  };
  const tjs = await import('@huggingface/transformers');
  const className = typeof config.tokenizer_class === 'string' ? config.tokenizer_class.replace(/Fast$/, '') : '';
  const mapping = tjs.AutoTokenizer.TOKENIZER_CLASS_MAPPING as unknown as Record<string, TjsTokenizerClass>;
  const Cls: TjsTokenizerClass = mapping[className] ?? (tjs.PreTrainedTokenizer as unknown as TjsTokenizerClass);
  const tok = new Cls(tokenizerJson, config);

  const bosId = typeof tok.bos_token_id === 'number' ? tok.bos_token_id : null;
  const eosIds: number[] = [];
  for (const id of [tok.eos_token_id, ...(opts.eosIds ?? [])]) {
    if (typeof id === 'number' && !eosIds.includes(id)) eosIds.push(id);
  }
  const vocabSize = Math.max(tok.model.vocab.length, ...tok.added_tokens.map((t) => t.id + 1));
  const probe = tok.encode('a', { add_special_tokens: true });
  const usesBos = bosId !== null && probe[0] === bosId;

  const tokenizer: HfTokenizer = {
    vocabSize,
    bosId,
    eosIds,
    usesBos,
    encode(text, o) {
      const ids = tok.encode(text, { add_special_tokens: false });
      return o?.addBos && usesBos ? [bosId!, ...ids] : ids;
    },
    decode(ids, o) {
      // transformers.js throws on an empty list; the empty sequence's text is the empty string.
      if (!ids.length) return '';
      return tok.decode([...ids], { skip_special_tokens: o?.skipSpecial ?? true });
    },
  };
  if (tok.chat_template) {
    tokenizer.applyChatTemplate = (messages, o) =>
      tok.apply_chat_template(messages, { tokenize: false, add_generation_prompt: o?.addGenerationPrompt ?? false });
  }
  return tokenizer;
}

/** Reads tokenizer.json (required) and tokenizer_config.json (optional) from a model folder. */
export async function loadHfTokenizer(files: FolderFiles, opts: HfTokenizerOptions = {}): Promise<HfTokenizer> {
  const jsonSrc = await files.get('tokenizer.json');
  if (!jsonSrc) throw new ModelFormatError('The model folder has no tokenizer.json');
  const configSrc = await files.get('tokenizer_config.json');
  return createHfTokenizer(await readJson(jsonSrc), configSrc ? await readJson(configSrc) : {}, opts);
}
