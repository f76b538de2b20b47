/**
 * Asking over linked chunks, for the studio: ContextCache's chatCompletion
 * plus what the page shows besides the answer: chunks compiled on demand
 * (LegoLink-0 needs its own variant; `prompt` compiles and reads none, it
 * links the chunks' tokens as an ordinary prompt), and the attention scores of one layer
 * and head, for the question rows (captured by KVLink while linking) and for
 * every generated row (captured by Engine.step while decoding).
 *
 * The prompt is built by the API's buildParts (chat template where the model
 * has one), linked by KVLink, decoded greedily or sampled like generate's
 * decode loop.
 */
import type { ContextCache } from '../api/context-cache';
import { buildParts, moduleSchemaPositions, type ChatMessage } from '../api/messages';
import { cacheId, type CompileVariant, type CompiledChunk } from '../kvcompile/compile';
import { link } from '../kvlink/link';
import { textOnlyChunk } from '../kvlink/layout';
import { compileVariantOf, formatAlgorithm, parseAlgorithm } from '../kvlink/algorithms';
import { TextStream } from '../generate/generate';
import { rng, sample } from '../generate/sampling';
import type { ScoresResult } from '../engine';
import type { AskRequest, AskResult, AttentionMap, ChunkRef, CompileVariantName, MapRow, StudioEvent } from './studio-protocol';

export const VARIANTS: Record<CompileVariantName, CompileVariant> = {
  plain: { kind: 'plain' },
  // Its defaults are filled in before the cache id is hashed (kvcompile resolveVariant), so any spelling names one cache.
  legolink0: { kind: 'legolink0' },
};

export function chunkId(lego: ContextCache, tokens: number[], variant: CompileVariant): Promise<string> {
  return cacheId({ modelId: lego.model.id, tokenizerId: lego.model.tokenizerId, bosId: lego.model.config.bosId }, tokens, variant);
}

/** The prompt an ask links: its chunks in order, then the question as text (chat template where the model has one). */
export const askMessages = (ids: string[], question: string): ChatMessage[] =>
  [{ role: 'user', content: [...ids.map((id) => ({ type: 'cache' as const, id })), { type: 'text', text: question }] }];

/**
 * The compile variant of every chunk of an ask. Prompt Cache's schema is the
 * chunks in this order: each is a module compiled at the positions it takes
 * in this prompt, so another order compiles other modules.
 */
export async function askVariants(
  lego: ContextCache, chunks: ChunkRef[], question: string, kind: CompileVariantName | 'promptcache',
): Promise<CompileVariant[]> {
  if (kind !== 'promptcache') return chunks.map(() => VARIANTS[kind]);
  const names = chunks.map((_, i) => String(i));
  const positions = await moduleSchemaPositions(
    askMessages(names, question), lego.model.tokenizer, lego.model.config.bosId, (id) => chunks[Number(id)].tokens,
  );
  return positions.map((p) => ({ kind: 'promptcache', positions: p }));
}

let decodeDelayMs = 0;

/** Slow motion for watching (and testing) a streamed answer and Stop: a pause after every decoded token. */
export function setDecodeDelay(ms: number) {
  decodeDelayMs = Math.max(0, Math.min(10_000, ms));
}

/** Compiles every chunk whose cache is not stored yet, one at a time (cancellable between chunks), chunk i as variants[i]. */
export async function compileChunks(
  lego: ContextCache, chunks: ChunkRef[], variants: CompileVariant[], signal: AbortSignal | undefined,
  onProgress: (ev: Extract<StudioEvent, { kind: 'compile' }>) => void,
): Promise<{ ids: string[]; compiled: number; ms: number }> {
  const ids: string[] = [];
  let compiled = 0;
  const t0 = performance.now();
  for (const [i, c] of chunks.entries()) {
    signal?.throwIfAborted();
    if (!c.tokens.length) throw new Error(`Chunk ${c.label} has no tokens`);
    const id = await chunkId(lego, c.tokens, variants[i]);
    const t = performance.now();
    const cached = await lego.store.has(id);
    if (!cached) {
      await lego.compileContext([c.tokens], { variant: variants[i] });
      compiled++;
    }
    ids.push(id);
    onProgress({ kind: 'compile', done: i + 1, total: chunks.length, key: c.key, status: cached ? 'cached' : 'compiled', ms: performance.now() - t });
  }
  return { ids, compiled, ms: performance.now() - t0 };
}

/** Reads a compiled chunk from the store; a missing or corrupt one is compiled again from its tokens. */
export async function loadChunk(lego: ContextCache, id: string, tokens: number[], variant: CompileVariant) {
  let r = await lego.store.get(id);
  const t = r.timing;
  const lookupMs = t.ms - t.readMs - t.decodeMs;
  let loadMs = t.readMs + t.decodeMs;
  if (r.status !== 'hit') {
    const t0 = performance.now();
    await lego.compileContext([tokens], { variant });
    r = await lego.store.get(id);
    loadMs += performance.now() - t0;
    if (r.status !== 'hit') throw new Error(`The cache of a chunk could not be stored and read back (${r.status})`);
  }
  const m = r.meta.meta as { variant: CompileVariant; positions: number[]; storedTokens: number[] };
  const chunk: CompiledChunk = { id, variant: m.variant, tokens: m.storedTokens, positions: m.positions, layers: r.layers };
  return { chunk, lookupMs, loadMs };
}

/**
 * Links the chunks and answers. With `warmup`, one untimed link and decode step run first, so that the TTFT of
 * a first request does not include compiling the GPU pipelines it uses.
 */
export async function askLinked(
  lego: ContextCache, req: AskRequest, signal: AbortSignal | undefined, emit: (ev: StudioEvent) => void, warmup = false,
): Promise<AskResult> {
  const { engine } = lego;
  const { tokenizer: tok, config } = lego.model;
  const algo = parseAlgorithm(req.algorithm);
  const algorithm = formatAlgorithm(algo);
  if (!req.chunks.length) throw new Error('Pick at least one chunk to link');
  if (!req.question.trim()) throw new Error('Type a question first');
  if (req.scores) {
    const { layer, head } = req.scores;
    if (!(layer >= 0 && layer < config.nLayers && head >= 0 && head < config.nHeads)) {
      throw new Error(`Layer ${layer} / head ${head} is out of range (${config.nLayers} layers, ${config.nHeads} heads)`);
    }
  }
  // prompt reads no cache: nothing is compiled, and each chunk is its tokens.
  const variants = algo.kind === 'prompt' ? null : await askVariants(lego, req.chunks, req.question, compileVariantOf(algorithm));
  const compiled = variants
    ? await compileChunks(lego, req.chunks, variants, signal, emit)
    : { ids: req.chunks.map((_, i) => `chunk ${i}`), compiled: 0, ms: 0 };
  signal?.throwIfAborted();

  const chunkOf = new Map(compiled.ids.map((id, i) => [id, i]));
  let lookupMs = 0, hostLoadMs = 0;
  const parts = await buildParts(askMessages(compiled.ids, req.question), tok, config.bosId, async (id) => {
    const i = chunkOf.get(id)!;
    if (!variants) return textOnlyChunk(id, req.chunks[i].tokens, config.bosId);
    const r = await loadChunk(lego, id, req.chunks[i].tokens, variants[i]);
    lookupMs += r.lookupMs;
    hostLoadMs += r.loadMs;
    return r.chunk;
  });
  const maxTokens = Math.max(1, Math.floor(req.maxTokens));
  const scoresReq = req.scores && { layer: req.scores.layer, heads: [req.scores.head] };
  if (warmup) {
    const w = await link(engine, parts, algo, { bosId: config.bosId, reserve: 2, scores: scoresReq });
    try {
      const opts = scoresReq ? { scores: { ...scoresReq, rows: [0] } } : {};
      await engine.exclusive(() => engine.step(w.cache, sample(w.logits, { temperature: 0 }, Math.random), undefined, opts));
    } finally {
      w.cache.destroy();
    }
  }
  const linked = await link(engine, parts, algo, { bosId: config.bosId, lookupMs, hostLoadMs, reserve: maxTokens + 1, scores: scoresReq });
  try {
    const N = linked.layout.tokens.length;
    const first = {
      ttft: linked.ttft, recomputed: linked.recomputed, recomputedFraction: linked.recomputedFraction, promptTokens: N,
      compiledOnDemand: compiled.compiled, compileMs: compiled.ms,
    };
    emit({ kind: 'first-token', first });
    const stream = new TextStream(tok, linked.layout.tokens);
    const random = rng(42);
    const generated: number[] = [];
    const stepScores: ScoresResult[] = [];
    let logits = linked.logits;
    const t0 = performance.now();
    for (let i = 0; i < maxTokens && !signal?.aborted; i++) {
      const next = sample(logits, { temperature: req.temperature }, random);
      if (config.eosIds.includes(next)) break;
      generated.push(next);
      const delta = stream.push(next);
      if (delta) emit({ kind: 'text', text: delta });
      if (decodeDelayMs) await new Promise((r) => setTimeout(r, decodeDelayMs));
      if (i + 1 < maxTokens) {
        const opts = scoresReq ? { scores: { ...scoresReq, rows: [0] } } : {};
        const r = await engine.exclusive(() => engine.step(linked.cache, next, undefined, opts));
        logits = r.logits;
        if (r.scores[0]) stepScores.push(r.scores[0]);
      }
    }
    const dt = performance.now() - t0;
    const n = generated.length;
    const map = req.scores ? buildMap(lego, algorithm, req, linked.layout, linked.scores, stepScores, generated) : null;
    return {
      algorithm, text: stream.text, tokens: n, decodeTokensPerS: n > 1 ? (n / dt) * 1000 : 0, cancelled: !!signal?.aborted, first, map,
    };
  } finally {
    linked.cache.destroy();
  }
}

function buildMap(
  lego: ContextCache, algorithm: string, req: AskRequest, layout: { tokens: number[]; segments: { start: number; length: number }[] },
  linkScores: ScoresResult[], stepScores: ScoresResult[], generated: number[],
): AttentionMap {
  const tok = lego.model.tokenizer;
  const bos = lego.model.config.bosId;
  const N = layout.tokens.length;
  const all = [...layout.tokens, ...generated];
  const keys = all.slice(0, N + stepScores.length);
  // A token's text as it reads in place (leading spaces included): decoded after the few tokens before it.
  const textAt = (i: number) => {
    const id = all[i];
    if (id === bos) return '<s>';
    const ctx = all.slice(Math.max(0, i - 4), i).filter((t) => t !== bos);
    const s = tok.decode([...ctx, id], { skipSpecial: false }).slice(tok.decode(ctx, { skipSpecial: false }).length);
    return s || tok.decode([id], { skipSpecial: false }) || `#${id}`;
  };
  const text = (id: number, i: number) => (all[i] === id ? textAt(i) : tok.decode([id]) || `#${id}`);
  const rows: MapRow[] = [];
  const q = linkScores.find((s) => s.head === req.scores!.head);
  if (q) {
    q.rows.forEach((row, i) => rows.push({ token: text(layout.tokens[row], row), kind: 'question', scores: q.scores.slice(i * q.keys, (i + 1) * q.keys) }));
  }
  stepScores.forEach((s, i) => rows.push({ token: text(generated[i], N + i), kind: 'answer', scores: s.scores.slice(0, s.keys) }));
  const last = layout.segments.at(-1);
  return {
    algorithm, layer: req.scores!.layer, head: req.scores!.head, columns: keys.map(text),
    segments: layout.segments.map((s, i) => ({ start: s.start, length: s.length, label: req.chunks[i]?.label ?? `chunk ${i + 1}` })),
    questionStart: last ? last.start + last.length : 0, promptTokens: N, rows,
  };
}
