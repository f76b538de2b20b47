/**
 * How the runner builds a case's request, after EPIC's harness: one user
 * message holding the chunks as cached parts in their order, then the
 * instruction and the question as uncached text. With a chat template the
 * message is rendered by it (ContextCache does that); without one the
 * contents are concatenated after BOS. The text is LongBench's shape:
 * "\n\n{instruction}\n\nQuestion: {question}\nAnswer:", or the question
 * verbatim when it ends with a colon (as "Dialogue: …\nSummary:" does).
 */
import type { ChatMessage } from '../api/context-cache';
import { chunkMessages } from '../api/messages';
import { DEFAULT_INSTRUCTION, type EvalCase } from './dataset';

/**
 * The uncached text after the chunks. An empty `instruction` means the case frames its own tail: the question
 * follows the chunks verbatim (the qa-demo set's "Question: …\nAnswer:" after chunks that end in a blank line,
 * exactly its training layout).
 */
export function questionText(c: EvalCase): string {
  if (c.instruction === '') return c.question;
  const instruction = c.instruction ?? DEFAULT_INSTRUCTION;
  const q = /:\s*$/.test(c.question) ? c.question : `Question: ${c.question}\nAnswer:`;
  return `\n\n${instruction}\n\n${q}`;
}

export function caseMessages(ids: readonly string[], c: EvalCase): ChatMessage[] {
  return chunkMessages(ids, questionText(c));
}

/**
 * What the runner scores: the generated text trimmed; for Rouge-L (summaries)
 * only its first non-empty line, as LongBench does for SAMSum.
 */
export function predictionForScoring(text: string, metric: EvalCase['metric']): string {
  const t = text.trim();
  if (metric === 'rougeL') return t.split('\n').find((l) => l.trim())?.trim() ?? '';
  return t;
}
