/**
 * The studio's shapes: documents as KVSplit cut them, the KVStore library,
 * an ask over linked chunks as the page shows it (answers, TTFT, attention
 * maps), the sink map and the TTFT sweep. Asking runs ContextCache through
 * api/ask.ts (studio-ask.ts adds the attention map).
 */
import type { StoreStats } from '../kvstore/types';
import type { GpuTierStats } from '../kvstore/gpu-tier';
import type { TtftBreakdown } from '../kvlink/link';
import type { SinkGrid } from '../analysis/sink-grid';
import type { AskFirst } from '../api/ask';
import type { AttentionMap } from '../types/attention';
import type { ChunkTable } from './chunk-table';

export type { AskFirst } from '../api/ask';
export type { AttentionMap, MapRow } from '../types/attention';

export type { ChunkInfo, ChunkTable } from './chunk-table';

export interface SplitResult {
  /** The model (and tokenizer) the chunks were cut and hashed for. */
  modelKey: string;
  chunks: ChunkTable;
  totalTokens: number;
}

/** A chunk handed to compile or ask: a key the page knows it by, a label, its token ids. */
export interface ChunkRef {
  key: string;
  label: string;
  tokens: number[];
}

export interface LibraryEntry {
  id: string;
  modelId: string;
  variant: string;
  tokens: number;
  bytes: number;
  /** Where its copies are: always OPFS, plus RAM when a decoded copy is held, plus GPU when the GPU tier holds its rows. */
  tier: 'GPU + RAM + OPFS' | 'GPU + OPFS' | 'RAM + OPFS' | 'OPFS';
  createdAt: number;
  lastUsedAt: number;
  hits: number;
  pinned: boolean;
}

export interface LibraryResult {
  entries: LibraryEntry[];
  stats: StoreStats;
  /** KVStore's GPU tier as the studio's ContextCache keeps it; null before the first model's studio session. */
  gpu: GpuTierStats | null;
}

/** TTFT and its parts, in milliseconds: KVLink's breakdown, as it comes out of the link. */
export type TtftSummary = TtftBreakdown;

export interface AskRequest {
  /** The chunks in the order they are linked. */
  chunks: ChunkRef[];
  question: string;
  /** A KVLink spec: prompt, full, naive, cacheblend:0.15, legolink:16, attnlink:16, legolink0, promptcache. */
  algorithm: string;
  maxTokens: number;
  temperature: number;
  /** Capture attention scores of one layer and head (question rows while linking, then every decode step). */
  scores?: { layer: number; head: number };
  /** The first ask of each algorithm warms its GPU pipelines, untimed (the studio's default). */
  warmup?: boolean;
}

export interface AskResult {
  algorithm: string;
  text: string;
  tokens: number;
  decodeTokensPerS: number;
  cancelled: boolean;
  first: AskFirst;
  map: AttentionMap | null;
}

/** Link the chunks once and measure, per layer and head, the question's attention on chunk starts (the demo's pick). */
export interface SinkMapRequest {
  chunks: ChunkRef[];
  question: string;
  /** A KVLink spec; the demo measures `naive`. */
  algorithm: string;
}

export interface SinkMapResult extends SinkGrid {
  algorithm: string;
  promptTokens: number;
  /** Time the link with every layer's and head's scores took. */
  ms: number;
}

export interface SweepRequest {
  /** Text repeated as needed to reach each context length. */
  text: string;
  chunkTokens: number;
  lengths: number[];
  algorithms: string[];
}

export interface SweepPoint {
  algorithm: string;
  contextTokens: number;
  chunks: number;
  ttft: TtftSummary;
  recomputed: number;
}

/** What the studio hears while it asks: per-chunk compile progress, the first token, streamed text. */
export type StudioEvent =
  | { kind: 'compile'; done: number; total: number; key: string; status: 'compiled' | 'cached'; ms: number }
  | { kind: 'first-token'; first: AskFirst }
  | { kind: 'text'; text: string };
