/**
 * A document's chunks packed in columns. A 4 MB document is cut into tens of
 * thousands of chunks; as one object each, the page spent a tenth of a second
 * decoding the split's message and as long again copying it into IndexedDB.
 * As a few typed arrays and one string, both are a memory copy, and the page
 * makes a `ChunkInfo` only for the chunks it shows or hands on.
 */

/** Characters in a cache id (compile.ts's cacheId: 16 bytes in hex). */
export const CACHE_ID_CHARS = 32;

/** One chunk of a document, as KVSplit cut it, with the cache ids it has under each compile variant. */
export interface ChunkInfo {
  index: number;
  /** Character offsets into the document text. */
  start: number;
  end: number;
  /** Token ids without BOS. */
  tokens: number[];
  ids: { plain: string; legolink0: string };
}

export interface ChunkTable {
  count: number;
  /** Chunk i covers characters [starts[i], ends[i]) of the document. */
  starts: Uint32Array;
  ends: Uint32Array;
  /** Chunk i's token ids (without BOS) are tokens[tokenStarts[i], tokenStarts[i + 1]). */
  tokenStarts: Uint32Array;
  tokens: Int32Array;
  /** Cache ids, CACHE_ID_CHARS each: the plain ids of every chunk, then their legolink0 ids. */
  ids: string;
}

/** Packs chunks (indexed 0..n-1 in order) into a table; every id must be CACHE_ID_CHARS long. */
export function packChunks(chunks: readonly Omit<ChunkInfo, 'index'>[]): ChunkTable {
  const n = chunks.length;
  const starts = new Uint32Array(n);
  const ends = new Uint32Array(n);
  const tokenStarts = new Uint32Array(n + 1);
  for (const [i, c] of chunks.entries()) {
    starts[i] = c.start;
    ends[i] = c.end;
    tokenStarts[i + 1] = tokenStarts[i] + c.tokens.length;
  }
  const tokens = new Int32Array(tokenStarts[n]);
  for (const [i, c] of chunks.entries()) tokens.set(c.tokens, tokenStarts[i]);
  for (const c of chunks) {
    for (const id of [c.ids.plain, c.ids.legolink0]) {
      if (id.length !== CACHE_ID_CHARS) throw new Error(`a cache id of ${id.length} characters (expected ${CACHE_ID_CHARS})`);
    }
  }
  const ids = chunks.map((c) => c.ids.plain).join('') + chunks.map((c) => c.ids.legolink0).join('');
  return { count: n, starts, ends, tokenStarts, tokens, ids };
}

export const tokenCount = (t: ChunkTable, i: number) => t.tokenStarts[i + 1] - t.tokenStarts[i];

export const chunkTokens = (t: ChunkTable, i: number): number[] => Array.from(t.tokens.subarray(t.tokenStarts[i], t.tokenStarts[i + 1]));

export const plainId = (t: ChunkTable, i: number) => t.ids.slice(i * CACHE_ID_CHARS, (i + 1) * CACHE_ID_CHARS);

export const legolink0Id = (t: ChunkTable, i: number) => t.ids.slice((t.count + i) * CACHE_ID_CHARS, (t.count + i + 1) * CACHE_ID_CHARS);

/** Chunk i as an object (undefined outside the table). */
export function chunkAt(t: ChunkTable, i: number): ChunkInfo | undefined {
  if (!Number.isInteger(i) || i < 0 || i >= t.count) return undefined;
  return { index: i, start: t.starts[i], end: t.ends[i], tokens: chunkTokens(t, i), ids: { plain: plainId(t, i), legolink0: legolink0Id(t, i) } };
}

const byId = new WeakMap<ChunkTable, Map<string, number>>();

/** The chunk whose plain or legolink0 cache id is `id` (the map is built once per table). */
export function chunkIndexOfId(t: ChunkTable, id: string): number | undefined {
  let m = byId.get(t);
  if (!m) {
    m = new Map();
    for (let i = 0; i < t.count; i++) {
      m.set(plainId(t, i), i);
      m.set(legolink0Id(t, i), i);
    }
    byId.set(t, m);
  }
  return m.get(id);
}

/** Whether `x` has a table's shape (saves from before the table held an array of chunk objects). */
export function isChunkTable(x: unknown): x is ChunkTable {
  const t = x as ChunkTable | null;
  return !!t && typeof t.count === 'number' && t.starts instanceof Uint32Array && t.ends instanceof Uint32Array
    && t.tokenStarts instanceof Uint32Array && t.tokenStarts.length === t.count + 1 && t.tokens instanceof Int32Array
    && typeof t.ids === 'string' && t.ids.length === 2 * t.count * CACHE_ID_CHARS;
}
