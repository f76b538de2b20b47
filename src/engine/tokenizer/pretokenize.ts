/**
 * Byte-level BPE's text handling before merges: GPT-2's reversible byte map, the regex pre-tokenizers that
 * `tokenizer.ggml.pre` names, and a split that keeps both matched and unmatched stretches.
 */

/** GPT-2's reversible byte -> printable character map. */
export function byteLevelTables(): { enc: string[]; dec: Map<string, number> } {
  const enc: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    enc[b] = String.fromCharCode(printable ? b : 256 + n++);
  }
  return { enc, dec: new Map(enc.map((c, b) => [c, b])) };
}

const CONTRACTIONS_CI = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]";
const RE_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const reLlama3 = (digits: string) =>
  `(?:${CONTRACTIONS_CI})|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}${digits}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;

/** Regex sequence of a pre-tokenizer name, and whether whole-word vocab hits skip merging. */
export function preTokenizer(pre: string | undefined): { regexes: RegExp[]; ignoreMerges: boolean; name: string } {
  const re = (s: string) => new RegExp(s, 'gu');
  switch (pre) {
    case 'qwen2': case 'deepseek-r1-qwen':
      return { regexes: [re(reLlama3(''))], ignoreMerges: false, name: 'qwen2' };
    case 'llama3': case 'llama-bpe': case 'llama-v3': case 'smaug-bpe': case 'dbrx':
      return { regexes: [re(reLlama3('{1,3}'))], ignoreMerges: true, name: 'llama3' };
    case 'smollm':
      return { regexes: [re('\\p{N}'), re(RE_GPT2)], ignoreMerges: false, name: 'smollm' };
    default:
      return { regexes: [re(RE_GPT2)], ignoreMerges: false, name: pre === 'gpt-2' || pre === 'gpt2' ? 'gpt2' : `gpt2 (fallback for "${pre ?? 'none'}")` };
  }
}

/** Splits text by a regex, keeping both matched and unmatched stretches. */
export function splitKeep(re: RegExp, text: string, out: string[]): void {
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[0].length) out.push(m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
}
