/** The refusal of a document over the size limit: file, size, limit in words, and the KV storage that limit stands for. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_DOCUMENT_CHARS, tooLargeMessage } from '../../src/ui/doc-limits';

// stories260K's shape: 5 layers, 4 KV heads × head dim 8 = 32 values per layer, K and V, f32.
const stories = { id: 'stories260K', layers: 5, kvDtype: 'f32' as const, kvBytesPerToken: 5 * 4 * 8 * 2 * 4 };
// SmolLM2-135M: 30 layers, 3 KV heads × head dim 64, kept as f16 (over 50M weights).
const smol = { id: 'SmolLM2-135M-Instruct', layers: 30, kvDtype: 'f16' as const, kvBytesPerToken: 30 * 3 * 64 * 2 * 2 };

test('a 50 MB file is refused by name, size and limit in words, with the storage its tokens would take', () => {
  const m = tooLargeMessage({ name: 'big.txt', bytes: 52_428_800, chars: 52_428_800 }, smol, 0.25);
  assert.match(m, /^"big\.txt" is too large: 52\.4 MB, 52,428,800 characters, more than the limit of 5,000,000 characters a document may have\./);
  // 5,000,000 characters × 0.25 tokens each = 1.25 M tokens × 23,040 bytes = 28.8 GB.
  assert.match(m, /5,000,000 characters are about 1\.3 million tokens for SmolLM2-135M-Instruct, and their KV cache would take 28\.8 GB of browser storage/);
  assert.match(m, /30 layers × 192 values \(KV heads × head dim\) × 2 \(K and V\) × 2 bytes \(f16\) = 23\.0 kB per token/);
  assert.doesNotMatch(m, /maxDocumentChars|[0-9a-f]{8}"/);
  // The measured tokens per character change the estimate; another model its storage.
  assert.match(tooLargeMessage({ name: 'a.md', chars: 6_000_000 }, stories, 0.5), /about 2\.5 million tokens for stories260K, and their KV cache would take 3\.2 GB .*5 layers × 32 values/);
  assert.equal(MAX_DOCUMENT_CHARS, 5_000_000);
});

test('a file too large to read, and no model loaded: still the name, the size and the limit', () => {
  const m = tooLargeMessage({ name: 'dump.txt', bytes: 80 * 2 ** 20 }, null);
  assert.match(m, /^"dump\.txt" is too large: 83\.9 MB, more than the 64 MiB a file may have \(and a document may have at most 5,000,000 characters\)\./);
  assert.match(m, /Split it into smaller documents/);
});
