/** Tokenizers and documents for the KVSplit tests. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { bufferSource } from '../../src/engine/formats/source';
import { Llama2cTokenizer } from '../../src/engine/tokenizer/llama2c';
import { loadHfTokenizer } from '../../src/engine/tokenizer/hf';
import type { Tokenizer } from '../../src/engine/tokenizer/types';
import { nodeFolderFiles } from '../../src/node/files';
import type { Chunk } from '../../src/kvsplit';

const root = join(import.meta.dirname, '../..');

let cache: Promise<{ name: string; tok: Tokenizer }[]> | null = null;

/** The real llama2.c tokenizer of stories260K and the Hugging Face SmolLM2 tokenizer. */
export function tokenizers(): Promise<{ name: string; tok: Tokenizer }[]> {
  cache ??= (async () => [
    { name: 'llama2c', tok: await Llama2cTokenizer.load(bufferSource('tok512.bin', readFileSync(join(root, 'public/models/stories260K/tok512.bin'))), 512) },
    { name: 'smollm2', tok: await loadHfTokenizer(nodeFolderFiles(join(root, 'tests/fixtures/hf/llama3-smollm'))) },
  ])();
  return cache;
}

/** A short story: passages, a hard-wrapped paragraph, dialogue, abbreviations, decimals, a list, non-ASCII. */
export const STORY = `Once upon a time, Mr. Brown lived in a small house by the sea. He had a dog named Max. Max was 3.5 years old!

"Can we go to the park?" asked Lily. Her mom smiled. "Yes, after lunch," she said, e.g. at two o'clock.
The sun was warm and the sky was blue. They packed a red ball, a kite and
some bread for the ducks, and walked down the hill together.

At the park, Dr. Smith waved at them… Max ran after the ball. It rolled into the pond? No, it stopped at the edge.
Lily laughed. Café owners brought naïve cakes 😀 to the picnic.

Things they saw:
1. A big tree.
2. Three ducks.
3. A boat with a white sail.

In the evening they went home. Everyone was tired but happy. The end.`;

/** Checks what holds for every mode. */
export function assertCommon(doc: string, chunks: Chunk[], docId = 'doc') {
  chunks.forEach((c, i) => {
    assert.equal(c.index, i);
    assert.equal(c.docId, docId);
    assert.equal(c.text, doc.slice(c.start, c.end), `chunk ${i}: text is the slice of its offsets`);
    assert.ok(c.start <= c.end, `chunk ${i}: start <= end`);
    if (i > 0) assert.ok(chunks[i - 1].end <= c.start, `chunk ${i}: offsets monotone`);
    assert.ok(c.tokens.length > 0, `chunk ${i} has tokens`);
  });
}

/** Trimmed chunks with whitespace-only gaps (semantic, boundaries, document). */
export function assertTrimmedCover(doc: string, chunks: Chunk[]) {
  let prev = 0;
  for (const c of chunks) {
    assert.match(doc.slice(prev, c.start), /^\s*$/, 'only whitespace between chunks');
    assert.equal(c.text, c.text.trim(), 'chunk text is trimmed');
    assert.ok(c.text.length > 0);
    prev = c.end;
  }
  assert.match(doc.slice(prev), /^\s*$/);
}
