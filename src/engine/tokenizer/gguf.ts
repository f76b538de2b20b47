/**
 * The tokenizer embedded in a GGUF file.
 *
 * - `tokenizer.ggml.model = "llama"`: SentencePiece-style BPE over scored
 *   pieces (Gemma, Llama 1/2). Spaces become "▁"; adjacent symbols are merged
 *   best-score-first (leftmost on ties); characters missing from the vocab
 *   fall back to byte tokens <0xXX>.
 * - `tokenizer.ggml.model = "gpt2"`: byte-level BPE with ranked merges (Qwen2,
 *   Llama 3, SmolLM), after a regex pre-tokenizer picked by `tokenizer.ggml.pre`.
 *
 * Control and user-defined tokens are matched in the input text first (longest
 * match, left to right), so chat markers like <start_of_turn> encode as one id.
 */
import { metaArray, metaBool, metaNumber, metaString, type GgufMetadata } from '../formats/gguf';
import { ModelFormatError } from '../formats/source';
import { renderChatML, renderGemma, type ChatFormat } from './chat-formats';
import { byteLevelTables, preTokenizer, splitKeep } from './pretokenize';
import type { ChatMessage, ChatTemplateOptions, Tokenizer } from './types';

/** llama.cpp token types (tokenizer.ggml.token_type). */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export interface GgufTokenizerSpec {
  model: 'llama' | 'gpt2';
  tokens: readonly string[];
  scores?: ArrayLike<number> | undefined;
  tokenTypes?: ArrayLike<number> | undefined;
  merges?: readonly string[] | undefined;
  /** Pre-tokenizer name (tokenizer.ggml.pre), gpt2 model only. */
  pre?: string | undefined;
  bosId: number | null;
  eosId: number | null;
  unkId?: number | null | undefined;
  /** Extra end-of-generation ids (eot, eom). */
  extraEosIds?: readonly number[] | undefined;
  addBos: boolean;
  addSpacePrefix: boolean;
  chatTemplate?: string | undefined;
}

export function tokenizerSpecFromGguf(md: GgufMetadata): GgufTokenizerSpec {
  const model = metaString(md, 'tokenizer.ggml.model');
  if (model !== 'llama' && model !== 'gpt2') {
    throw new ModelFormatError(
      model === undefined
        ? 'GGUF file has no embedded tokenizer (tokenizer.ggml.model is missing)'
        : `GGUF tokenizer model "${model}" is not supported (supported: llama, gpt2)`,
    );
  }
  const strings = (key: string): string[] | undefined => {
    const a = metaArray(md, key);
    if (a === undefined) return undefined;
    if (a.type !== 8) throw new ModelFormatError(`GGUF metadata ${key} should be an array of strings`);
    return a.items;
  };
  const numbers = (key: string): ArrayLike<number> | undefined => {
    const a = metaArray(md, key);
    if (a === undefined) return undefined;
    if (a.type === 7 || a.type === 8 || a.type === 9 || a.type === 10 || a.type === 11) {
      throw new ModelFormatError(`GGUF metadata ${key} should be an array of numbers`);
    }
    return a.items;
  };
  const tokens = strings('tokenizer.ggml.tokens');
  if (!tokens) throw new ModelFormatError('GGUF tokenizer has no tokenizer.ggml.tokens');
  const id = (k: string): number | null => metaNumber(md, `tokenizer.ggml.${k}`) ?? null;
  const extra = [id('eot_token_id'), id('eom_token_id')].filter((x): x is number => x !== null);
  return {
    model,
    tokens,
    scores: numbers('tokenizer.ggml.scores'),
    tokenTypes: numbers('tokenizer.ggml.token_type'),
    merges: strings('tokenizer.ggml.merges'),
    pre: metaString(md, 'tokenizer.ggml.pre'),
    bosId: id('bos_token_id'),
    eosId: id('eos_token_id'),
    unkId: id('unknown_token_id'),
    extraEosIds: extra,
    addBos: metaBool(md, 'tokenizer.ggml.add_bos_token') ?? model === 'llama',
    addSpacePrefix: metaBool(md, 'tokenizer.ggml.add_space_prefix') ?? model === 'llama',
    chatTemplate: metaString(md, 'tokenizer.chat_template'),
  };
}

// ---- helpers --------------------------------------------------------------------

/** Max-heap of merge candidates: best score first, then leftmost. */
class MergeHeap {
  private a: { score: number; left: number; right: number; text: string }[] = [];
  get size(): number { return this.a.length; }
  private better(i: number, j: number): boolean {
    const x = this.a[i]!, y = this.a[j]!;
    return x.score > y.score || (x.score === y.score && x.left < y.left);
  }
  push(e: { score: number; left: number; right: number; text: string }): void {
    const a = this.a;
    a.push(e);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.better(i, p)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): { score: number; left: number; right: number; text: string } {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && this.better(l, m)) m = l;
        if (r < a.length && this.better(r, m)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

const utf8 = new TextEncoder();
const utf8Dec = new TextDecoder('utf-8', { ignoreBOM: true });

// ---- the tokenizer ------------------------------------------------------------------

export class GgufTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosIds: readonly number[];
  readonly chatFormat: ChatFormat | null;
  readonly preTokenizerName: string | null;
  readonly applyChatTemplate?: (messages: ChatMessage[], opts?: ChatTemplateOptions) => string;

  private readonly types: Uint8Array;
  private readonly vocab = new Map<string, number>();
  /** Pieces that may be formed by merging (normal, user-defined, unused). */
  private readonly mergeable = new Map<string, number>();
  private readonly scores: ArrayLike<number>;
  private readonly specials: Map<string, { text: string; id: number; control: boolean }[]> = new Map();
  private readonly byteIds = new Int32Array(256).fill(-1);
  private readonly ranks = new Map<string, number>();
  private readonly bl = byteLevelTables();
  private readonly pre: ReturnType<typeof preTokenizer> | null;
  private readonly cache = new Map<string, number[]>();

  constructor(private readonly spec: GgufTokenizerSpec) {
    const { tokens } = spec;
    this.vocabSize = tokens.length;
    this.bosId = spec.bosId;
    this.types = new Uint8Array(tokens.length);
    this.scores = spec.scores ?? new Float32Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      const type = spec.tokenTypes?.[i] ?? TokenType.NORMAL;
      this.types[i] = type;
      if (!this.vocab.has(t)) this.vocab.set(t, i);
      if ((type === TokenType.NORMAL || type === TokenType.USER_DEFINED || type === TokenType.UNUSED || type === 0) && !this.mergeable.has(t)) {
        this.mergeable.set(t, i);
      }
      if (type === TokenType.BYTE) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(t);
        if (m) this.byteIds[parseInt(m[1]!, 16)] = i;
      }
      if ((type === TokenType.CONTROL || type === TokenType.USER_DEFINED) && t.length > 0) {
        const list = this.specials.get(t[0]!) ?? [];
        list.push({ text: t, id: i, control: type === TokenType.CONTROL });
        this.specials.set(t[0]!, list);
      }
    }
    for (const list of this.specials.values()) list.sort((a, b) => b.text.length - a.text.length);
    if (spec.model === 'gpt2') {
      if (!spec.merges) throw new ModelFormatError('GGUF gpt2 tokenizer has no tokenizer.ggml.merges');
      spec.merges.forEach((m, r) => { if (!this.ranks.has(m)) this.ranks.set(m, r); });
      this.pre = preTokenizer(spec.pre);
      this.preTokenizerName = this.pre.name;
    } else {
      this.pre = null;
      this.preTokenizerName = null;
    }
    // End of generation: eos, eot, eom, and the end-of-turn markers of the chat formats.
    const eos = [spec.eosId, ...(spec.extraEosIds ?? [])].filter((x): x is number => x !== null && x >= 0);
    for (const t of ['<end_of_turn>', '<|im_end|>', '<|eot_id|>', '<|end_of_text|>', '<|endoftext|>', '<|end|>']) {
      const id = this.vocab.get(t);
      if (id !== undefined && this.types[id] === TokenType.CONTROL) eos.push(id);
    }
    this.eosIds = [...new Set(eos)];

    const tpl = spec.chatTemplate ?? '';
    this.chatFormat = tpl.includes('<start_of_turn>') ? 'gemma' : tpl.includes('<|im_start|>') ? 'chatml' : null;
    if (this.chatFormat === 'gemma') this.applyChatTemplate = renderGemma;
    else if (this.chatFormat === 'chatml') {
      const m = /<\|im_start\|>system(?:\\n|\n)([^<{}]*?)<\|im_end\|>/.exec(tpl);
      const defaultSystem = m ? m[1]!.replace(/\\n/g, '\n') : undefined;
      this.applyChatTemplate = (msgs, opts) => renderChatML(msgs, defaultSystem, opts);
    }
  }

  tokenId(text: string): number | undefined {
    return this.vocab.get(text);
  }

  /** `parseSpecial` (default true) matches control tokens in the text; user-defined ones always match. */
  encode(text: string, opts: { addBos?: boolean; parseSpecial?: boolean } = {}): number[] {
    const out: number[] = [];
    // SentencePiece cannot tell a literal '▁' from an escaped space; neither do we (so '▁ ' can
    // match a user-defined two-space token, as in SentencePiece itself).
    if (this.spec.model === 'llama') text = text.replace(/\u2581/g, ' ');
    if (opts.addBos && this.spec.addBos && this.bosId !== null) out.push(this.bosId);
    const parseSpecial = opts.parseSpecial ?? true;
    let start = 0;
    for (let i = 0; i < text.length; ) {
      const cands = this.specials.get(text[i]!);
      const hit = cands?.find((c) => (parseSpecial || !c.control) && text.startsWith(c.text, i));
      if (hit) {
        if (i > start) this.encodeFragment(text.slice(start, i), out);
        out.push(hit.id);
        i += hit.text.length;
        start = i;
      } else i++;
    }
    if (start < text.length) this.encodeFragment(text.slice(start), out);
    return out;
  }

  /** Text between special tokens. Like llama.cpp, each such fragment gets the SPM space prefix. */
  private encodeFragment(text: string, out: number[]): void {
    if (this.spec.model === 'llama') {
      const s = (this.spec.addSpacePrefix ? ' ' : '') + text;
      this.spm(s.replace(/ /g, '\u2581'), out);
      return;
    }
    let pieces = [text];
    for (const re of this.pre!.regexes) {
      const next: string[] = [];
      for (const p of pieces) splitKeep(re, p, next);
      pieces = next;
    }
    for (const p of pieces) this.bpeWord(p, out);
  }

  /** SentencePiece BPE: merge the best-scoring adjacent pair until none is in the vocab. */
  private spm(text: string, out: number[]): void {
    const sym = Array.from(text);
    const n = sym.length;
    const prev = new Int32Array(n).map((_, i) => i - 1);
    const next = new Int32Array(n).map((_, i) => (i + 1 < n ? i + 1 : -1));
    const heap = new MergeHeap();
    const revMerge = new Map<string, [string, string]>();
    const tryPair = (l: number, r: number) => {
      if (l < 0 || r < 0) return;
      const t = sym[l]! + sym[r]!;
      const id = this.mergeable.get(t);
      if (id === undefined) return;
      heap.push({ score: this.scores[id]!, left: l, right: r, text: t });
      if (this.types[id] === TokenType.UNUSED) revMerge.set(t, [sym[l]!, sym[r]!]);
    };
    for (let i = 0; i + 1 < n; i++) tryPair(i, i + 1);
    while (heap.size) {
      const b = heap.pop();
      if (sym[b.left] === '' || sym[b.right] === '' || sym[b.left]! + sym[b.right]! !== b.text) continue; // stale
      sym[b.left] = b.text;
      sym[b.right] = '';
      const nr = next[b.right]!;
      next[b.left] = nr;
      if (nr >= 0) prev[nr] = b.left;
      tryPair(prev[b.left]!, b.left);
      tryPair(b.left, nr);
    }
    const emit = (s: string) => {
      const id = this.mergeable.get(s);
      if (id !== undefined && this.types[id] !== TokenType.UNUSED) return void out.push(id);
      const parts = revMerge.get(s);
      if (parts) return void (emit(parts[0]), emit(parts[1]));
      for (const byte of utf8.encode(s)) {
        const bid = this.byteIds[byte]!;
        if (bid >= 0) out.push(bid);
        else if (this.spec.unkId != null) out.push(this.spec.unkId);
      }
    };
    for (let i = n > 0 ? 0 : -1; i >= 0; i = next[i]!) emit(sym[i]!);
  }

  /** Byte-level BPE of one pre-tokenized word: lowest-rank merge first. */
  private bpeWord(word: string, out: number[]): void {
    const cached = this.cache.get(word);
    if (cached) return void out.push(...cached);
    const mapped = Array.from(utf8.encode(word), (b) => this.bl.enc[b]!).join('');
    let ids: number[];
    const whole = this.vocab.get(mapped);
    if (this.pre!.ignoreMerges && whole !== undefined) ids = [whole];
    else {
      const sym = Array.from(mapped);
      for (;;) {
        let best = -1, bestRank = Infinity;
        for (let i = 0; i + 1 < sym.length; i++) {
          const r = this.ranks.get(sym[i] + ' ' + sym[i + 1]);
          if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
        }
        if (best < 0) break;
        sym.splice(best, 2, sym[best]! + sym[best + 1]!);
      }
      ids = [];
      for (const s of sym) {
        const id = this.vocab.get(s);
        if (id !== undefined) ids.push(id);
        else if (this.spec.unkId != null) ids.push(this.spec.unkId);
      }
    }
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(word, ids);
    out.push(...ids);
  }

  decode(ids: readonly number[], opts: { skipSpecial?: boolean } = {}): string {
    const skip = opts.skipSpecial ?? true;
    const bytes: number[] = [];
    const push = (s: string) => { for (const b of utf8.encode(s)) bytes.push(b); };
    for (const id of ids) {
      const t = this.spec.tokens[id];
      if (t === undefined) continue;
      const type = this.types[id];
      if (type === TokenType.CONTROL || type === TokenType.UNKNOWN) {
        if (!skip) push(t);
      } else if (type === TokenType.BYTE) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(t);
        if (m) bytes.push(parseInt(m[1]!, 16));
      } else if (type === TokenType.USER_DEFINED) push(t);
      else if (this.spec.model === 'llama') push(t.replace(/\u2581/g, ' '));
      else for (const c of t) { const b = this.bl.dec.get(c); if (b !== undefined) bytes.push(b); else push(c); }
    }
    let s = utf8Dec.decode(new Uint8Array(bytes));
    if (this.spec.model === 'llama' && this.spec.addSpacePrefix && s.startsWith(' ')) s = s.slice(1);
    return s;
  }
}

export function createGgufTokenizer(spec: GgufTokenizerSpec): GgufTokenizer {
  return new GgufTokenizer(spec);
}
