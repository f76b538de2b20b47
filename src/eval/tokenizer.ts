/**
 * Loading just a tokenizer (no weights, no GPU) in Node, for measuring chunk
 * lengths in the dataset generators: a llama2.c tokenizer .bin, a llama2.c
 * model .bin with its tokenizer beside it, a .gguf (its embedded
 * tokenizer), or a Hugging Face folder (tokenizer.json).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Llama2cTokenizer, createGgufTokenizer, tokenizerSpecFromGguf, parseGguf, loadHfTokenizer, type Tokenizer } from '../engine';
import { nodeFileSource, nodeFolderFiles } from '../node/files';

export const REPO_ROOT = join(import.meta.dirname, '../..');

/** Short names for the models this project knows about. */
export const KNOWN_MODELS: Record<string, string> = {
  stories260K: join(REPO_ROOT, 'public/models/stories260K/stories260K.bin'),
  'qa-demo': join(REPO_ROOT, 'public/models/qa-demo'),
  'gemma-3-270m': join(REPO_ROOT, '.cache/models/gemma-3-270m-q4_k_m.gguf'),
  'smollm2-135m-instruct': join(REPO_ROOT, '.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf'),
};

export function resolveModelPath(m: string): string {
  return KNOWN_MODELS[m] ?? m;
}

/** The --model option of the commands that take one (src/cli/options.ts): a path or a known name, checked to exist. */
export function modelOption(dflt: string) {
  const names = Object.keys(KNOWN_MODELS).join(', ');
  return {
    type: 'string', default: dflt, arg: 'path|name', help: `the model: a file or folder, or a known name (${names})`,
    check: (m: string) => (existsSync(resolveModelPath(m)) ? undefined : KNOWN_MODELS[m] ? 'not fetched yet (npm run fetch:models fetches it)' : `no such file or folder, nor a known name (${names})`),
  } as const;
}

export const DEFAULT_TOKENIZER = join(REPO_ROOT, 'public/models/stories260K/tok512.bin');

/** Number of entries in a llama2.c tokenizer file (int32 max length, then score, length, bytes per entry). */
function llama2cVocabSize(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 4;
  let n = 0;
  while (off + 8 <= bytes.byteLength) {
    const len = view.getInt32(off + 4, true);
    if (len < 0 || off + 8 + len > bytes.byteLength) break;
    off += 8 + len;
    n++;
  }
  return n;
}

export async function loadTokenizerOnly(path: string): Promise<{ tokenizer: Tokenizer; name: string }> {
  path = resolveModelPath(path);
  if (!existsSync(path)) throw new Error(`No tokenizer or model at ${path}`);
  const name = basename(path);
  if (statSync(path).isDirectory()) return { tokenizer: await loadHfTokenizer(nodeFolderFiles(path)), name };
  if (path.endsWith('.gguf')) {
    const g = await parseGguf(await nodeFileSource(path));
    return { tokenizer: createGgufTokenizer(tokenizerSpecFromGguf(g.metadata)), name };
  }
  if (path.endsWith('.bin')) {
    // A model checkpoint: use the tokenizer .bin beside it.
    let tokPath = path;
    if (!/^(tok.*|tokenizer)\.bin$/.test(name)) {
      const sib = readdirSync(dirname(path)).find((f) => /^(tok.*|tokenizer)\.bin$/.test(f));
      if (!sib) throw new Error(`No llama2.c tokenizer .bin beside ${path}`);
      tokPath = join(dirname(path), sib);
    }
    const src = await nodeFileSource(tokPath);
    const bytes = await src.read(0, src.size);
    return { tokenizer: await Llama2cTokenizer.load(src, llama2cVocabSize(bytes)), name: basename(tokPath) };
  }
  throw new Error(`Cannot read a tokenizer from ${path} (expected a llama2.c .bin, a .gguf or a Hugging Face folder)`);
}
