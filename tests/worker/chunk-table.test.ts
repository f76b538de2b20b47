/** The packed chunk table (chunk-table.ts): what goes in comes out, ids are found, and bad shapes are refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkAt, chunkIndexOfId, isChunkTable, packChunks, tokenCount } from '../../src/worker/chunk-table';
import { docChunkKeys, resolveChunk, type StudioDoc } from '../../src/ui/studio-store';

const id = (s: string) => s.padEnd(32, '0');
const chunks = [
  { start: 0, end: 5, tokens: [7, 8, 9], ids: { plain: id('a'), legolink0: id('a1') } },
  { start: 5, end: 9, tokens: [], ids: { plain: id('b'), legolink0: id('b1') } },
  { start: 9, end: 20, tokens: [2 ** 31 - 1, -1], ids: { plain: id('c'), legolink0: id('c1') } },
];

test('chunk table: chunks come back as they went in, and ids find their chunk', () => {
  const t = packChunks(chunks);
  assert.equal(t.count, 3);
  assert.deepEqual([0, 1, 2].map((i) => chunkAt(t, i)), chunks.map((c, index) => ({ index, ...c })));
  assert.deepEqual([0, 1, 2].map((i) => tokenCount(t, i)), [3, 0, 2]);
  assert.equal(chunkAt(t, 3), undefined);
  assert.equal(chunkAt(t, -1), undefined);
  assert.equal(chunkAt(t, 1.5), undefined);
  assert.equal(chunkIndexOfId(t, id('c')), 2);
  assert.equal(chunkIndexOfId(t, id('b1')), 1);
  assert.equal(chunkIndexOfId(t, id('z')), undefined);
  assert.ok(isChunkTable(t));
  assert.ok(isChunkTable(structuredClone(t)), 'a table survives postMessage and IndexedDB');
  assert.ok(!isChunkTable(chunks), 'a save from before the table');
  assert.ok(!isChunkTable({ ...t, ids: t.ids.slice(1) }));
  assert.throws(() => packChunks([{ ...chunks[0], ids: { plain: 'short', legolink0: id('x') } }]), /cache id of 5 characters/);
});

test('composer keys resolve against the current split only', () => {
  const doc = { id: 'd#1', name: 'notes', kind: 'paste', text: 'Hello world, again and again', mode: { kind: 'document' }, addedAt: 0 } as StudioDoc;
  const s = { docs: [doc], splits: { [doc.id]: { modelKey: 'm', modeKey: 'document', chunks: packChunks(chunks), totalTokens: 5 } } };
  const r = resolveChunk(s, 'd#1#2');
  assert.equal(r?.label, 'notes · 3');
  assert.equal(r?.text, doc.text.slice(9, 20));
  assert.deepEqual(r?.chunk.tokens, [2 ** 31 - 1, -1]);
  for (const k of ['d#1#3', 'd#1#', 'd#1#x', 'other#0', 'd#1']) assert.equal(resolveChunk(s, k), undefined, k);
  assert.deepEqual(docChunkKeys(s, doc.id), ['d#1#0', 'd#1#1', 'd#1#2']);
  assert.deepEqual(docChunkKeys(s, 'other'), []);
});
