/**
 * The studio's ask: api/ask.ts over any ContextCacheApi (on the page, the
 * worker's transport; in tests, a ContextCache), with the composer's chunk
 * keys and labels on the progress events, and the attention map of one layer
 * and head built from the question rows' scores (captured while linking) and
 * every decode step's (captured by the decode loop).
 */
import { ask, type AskOutcome } from '../api/ask';
import type { ContextCacheApi } from '../api/context-cache';
import type { AskRequest, AskResult, AttentionMap, MapRow, StudioEvent } from './studio-protocol';

export interface StudioAskOptions {
  signal?: AbortSignal;
  /** Slow motion: a pause after every decoded token. */
  decodeDelayMs?: number;
}

export async function studioAsk(
  api: ContextCacheApi, req: AskRequest, emit: (ev: StudioEvent) => void, o: StudioAskOptions = {},
): Promise<AskResult> {
  const out = await ask(
    api,
    {
      chunks: req.chunks.map((c) => c.tokens), question: req.question, algorithm: req.algorithm, maxTokens: Math.max(1, Math.floor(req.maxTokens)),
      temperature: req.temperature, scores: req.scores && { layer: req.scores.layer, heads: [req.scores.head] },
      warmup: req.warmup ?? true, decodeDelayMs: o.decodeDelayMs, signal: o.signal,
    },
    {
      onCompile: (p) => emit({ kind: 'compile', done: p.done, total: p.total, key: req.chunks[p.index].key, status: p.status, ms: p.ms }),
      onFirst: (first) => emit({ kind: 'first-token', first }),
      onText: (text) => emit({ kind: 'text', text }),
    },
  );
  const map = req.scores ? await buildMap(api, req, out) : null;
  return { algorithm: out.algorithm, text: out.text, tokens: out.tokens, decodeTokensPerS: out.decodeTokensPerS, cancelled: out.cancelled, first: out.first, map };
}

async function buildMap(api: ContextCacheApi, req: AskRequest, out: AskOutcome): Promise<AttentionMap> {
  const { layout } = out;
  const { layer, head } = req.scores!;
  const N = layout.tokens.length;
  // Keys: the prompt's rows, then every generated token fed back (one per decode step).
  const pieces = await api.tokenPieces([...layout.tokens, ...out.generated.slice(0, out.steps.length)]);
  const rows: MapRow[] = [];
  const q = out.scores.find((s) => s.head === head);
  if (q) q.rows.forEach((row, i) => rows.push({ token: pieces[row], kind: 'question', scores: q.scores.slice(i * q.keys, (i + 1) * q.keys) }));
  out.steps.forEach((s, i) => {
    const r = s.find((x) => x.head === head) ?? s[0];
    rows.push({ token: pieces[N + i], kind: 'answer', scores: r.scores.slice(0, r.keys) });
  });
  const last = layout.segments.at(-1);
  return {
    algorithm: out.algorithm, layer, head, columns: pieces,
    segments: layout.segments.map((s, i) => ({ start: s.start, length: s.length, label: req.chunks[i]?.label ?? `chunk ${i + 1}` })),
    questionStart: last ? last.start + last.length : 0, promptTokens: N, rows,
  };
}
