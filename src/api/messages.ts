/**
 * Chat messages whose content mixes text and cached chunks become KVLink
 * parts. With a chat template, the conversation is rendered with a marker
 * where each cached chunk goes, and the text between markers is tokenized
 * piece by piece; without one, the contents are concatenated in order.
 */
import type { Tokenizer } from '../engine';
import type { CompiledChunk, LinkPart } from '../types/kv';
import { layoutParts } from '../kvlink/layout';

export type ContentPart =
  | { type: 'text'; text: string }
  /** A cached chunk; `tokens`, where the caller has them, serve the `prompt` algorithm, which reads no cache. */
  | { type: 'cache'; id: string; tokens?: number[] };
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string | ContentPart[];
}

const MARK = '\u2063LEGOKV:';
const MARK_RE = /\u2063LEGOKV:(\d+)\u2063/;

export async function buildParts(
  messages: ChatMessage[], tok: Tokenizer, bosId: number | null, load: (id: string) => Promise<CompiledChunk>,
): Promise<LinkPart[]> {
  const caches: string[] = [];
  const flat = messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string'
      ? m.content
      : m.content.map((p) => (p.type === 'text' ? p.text : `${MARK}${caches.push(p.id) - 1}\u2063`)).join(''),
  }));
  const rendered = tok.applyChatTemplate
    ? tok.applyChatTemplate(flat, { addGenerationPrompt: true })
    : flat.map((m) => m.content).join('');
  const pieces = rendered.split(MARK_RE);
  const parts: LinkPart[] = [];
  for (let i = 0; i < pieces.length; i++) {
    if (i % 2 === 1) {
      parts.push({ kind: 'cache', chunk: await load(caches[Number(pieces[i])]) });
    } else if (pieces[i]) {
      let tokens = tok.encode(pieces[i], { addBos: false });
      // A template that writes BOS itself: the linker puts the one BOS first.
      if (parts.length === 0 && bosId !== null && tokens[0] === bosId) tokens = tokens.slice(1);
      if (tokens.length) parts.push({ kind: 'text', tokens });
    }
  }
  return parts;
}

/** The prompt of an ask or an evaluation case: one user message, the chunks in order, then the text after them. */
export const chunkMessages = (ids: readonly string[], text: string): ChatMessage[] =>
  [{ role: 'user', content: [...ids.map((id) => ({ type: 'cache' as const, id })), { type: 'text' as const, text }] }];

/**
 * Prompt Cache's schema for a prompt of cached chunks: one module per chunk,
 * at the positions the chunk takes in this prompt (after BOS and any
 * chat-template text before it). `tokensOf` gives each cache id's tokens;
 * returns the positions of each chunk, in the order they appear.
 */
export async function moduleSchemaPositions(
  messages: ChatMessage[], tok: Tokenizer, bosId: number | null, tokensOf: (id: string) => number[],
): Promise<number[][]> {
  const stand = (id: string): CompiledChunk => ({ id, variant: { kind: 'legolink0' }, tokens: tokensOf(id), positions: [], layers: [] });
  const layout = layoutParts(await buildParts(messages, tok, bosId, async (id) => stand(id)), bosId);
  return layout.segments.map((s) => layout.positions.slice(s.start, s.start + s.length));
}
