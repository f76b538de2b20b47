/**
 * The evaluation dataset format: JSONL, one case per line.
 *
 *   {"id": "needle-2048-d50", "chunks": ["…", "…"], "question": "…", "answers": ["…"],
 *    "metric": "f1" | "rougeL", "instruction"?: "…", "meta"?: {…}}
 *
 * `chunks` are linked as cached parts in the given order; `instruction` (or
 * DEFAULT_INSTRUCTION) and `question` are the uncached text after them
 * (an empty `instruction` puts the question after the chunks verbatim);
 * `answers` are the references (the score is the best over them); `meta` is
 * free-form (generator parameters such as depth or context tokens) and is
 * copied into the results.
 */
import { readFileSync } from 'node:fs';

export type MetricName = 'f1' | 'rougeL';

export interface EvalCase {
  id: string;
  chunks: string[];
  question: string;
  answers: string[];
  metric: MetricName;
  instruction?: string;
  meta?: Record<string, unknown>;
}

export const DEFAULT_INSTRUCTION = 'Answer the question based on the documents. Answer within 5 words.';

/** Throws an Error naming the first thing wrong with `c`. */
export function validateCase(c: unknown, where = 'case'): asserts c is EvalCase {
  const fail = (msg: string): never => {
    throw new Error(`${where}: ${msg}`);
  };
  if (typeof c !== 'object' || c === null || Array.isArray(c)) fail('not a JSON object');
  const o = c as Record<string, unknown>;
  if (typeof o.id !== 'string' || !o.id) fail('"id" must be a non-empty string');
  if (!Array.isArray(o.chunks) || o.chunks.length === 0) fail('"chunks" must be a non-empty array of strings');
  (o.chunks as unknown[]).forEach((ch, i) => {
    if (typeof ch !== 'string' || ch.length === 0) fail(`chunks[${i}] must be a non-empty string`);
  });
  if (typeof o.question !== 'string' || !o.question) fail('"question" must be a non-empty string');
  if (!Array.isArray(o.answers) || o.answers.length === 0 || o.answers.some((a) => typeof a !== 'string' || !a)) {
    fail('"answers" must be a non-empty array of non-empty strings');
  }
  if (o.metric !== 'f1' && o.metric !== 'rougeL') fail(`"metric" must be "f1" or "rougeL", got ${JSON.stringify(o.metric)}`);
  if (o.instruction !== undefined && typeof o.instruction !== 'string') fail('"instruction" must be a string');
  if (o.meta !== undefined && (typeof o.meta !== 'object' || o.meta === null || Array.isArray(o.meta))) fail('"meta" must be an object');
}

/** Parses JSONL text (blank lines allowed), validating every case and the uniqueness of ids. */
export function parseDataset(text: string, name = 'dataset'): EvalCase[] {
  const out: EvalCase[] = [];
  const ids = new Set<string>();
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let c: unknown;
    try {
      c = JSON.parse(line);
    } catch (e) {
      throw new Error(`${name}:${i + 1}: not valid JSON (${(e as Error).message})`);
    }
    validateCase(c, `${name}:${i + 1}`);
    if (ids.has(c.id)) throw new Error(`${name}:${i + 1}: id "${c.id}" is used twice`);
    ids.add(c.id);
    out.push(c);
  });
  return out;
}

export function readDataset(path: string): EvalCase[] {
  return parseDataset(readFileSync(path, 'utf8'), path);
}

/** One case as a JSONL line, keys in the documented order. */
export function caseLine(c: EvalCase): string {
  const o: Record<string, unknown> = { id: c.id, chunks: c.chunks, question: c.question, answers: c.answers, metric: c.metric };
  if (c.instruction !== undefined) o.instruction = c.instruction;
  if (c.meta !== undefined) o.meta = c.meta;
  return JSON.stringify(o);
}

export function toJsonl(cases: EvalCase[]): string {
  return cases.map((c) => caseLine(c) + '\n').join('');
}
