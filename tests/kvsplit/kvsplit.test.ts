/**
 * KVSplit with the real llama2.c (stories260K) and SmolLM2 (Hugging Face)
 * tokenizers: fixed runs, semantic packing, user boundaries, whole documents,
 * determinism and the errors for empty, binary and huge input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  allSentences, BinaryDocumentError, decodeDocumentBytes, decodeText, DocumentTooLargeError, EmptyDocumentError, splitDocument,
  SplitError, type Chunk,
} from '../../src/kvsplit';
import { assertCommon, assertTrimmedCover, STORY, tokenizers } from './helpers';

const doc = { id: 'doc', text: STORY };

test('fixed: exact runs of the document ids, partitioning the text', async () => {
  for (const { name, tok } of await tokenizers()) {
    const all = tok.encode(STORY, { addBos: false });
    for (const n of [1, 7, 64, 512]) {
      const chunks = splitDocument(doc, tok, { kind: 'fixed', tokens: n });
      const msg = `${name}, ${n} tokens`;
      assertCommon(STORY, chunks);
      assert.equal(chunks.length, Math.ceil(all.length / n), msg);
      chunks.forEach((c, i) => assert.equal(c.tokens.length, i < chunks.length - 1 ? n : all.length - n * i, msg));
      assert.deepEqual(chunks.flatMap((c) => c.tokens), all, `${msg}: ids are the document's, in order`);
      assert.equal(chunks[0].start, 0);
      assert.equal(chunks.at(-1)!.end, STORY.length);
      chunks.forEach((c, i) => i && assert.equal(c.start, chunks[i - 1].end, `${msg}: no gaps`));
      assert.equal(chunks.map((c) => c.text).join(''), STORY, `${msg}: texts join to the document`);
    }
  }
});

test('fixed: each chunk text is what its ids decode to', async () => {
  // ASCII only, so no decoder drops or replaces anything.
  const text = STORY.replace(/[^\x00-\x7f]/g, '');
  for (const { name, tok } of await tokenizers()) {
    for (const n of [5, 32]) {
      const chunks = splitDocument({ id: 'a', text }, tok, { kind: 'fixed', tokens: n });
      for (const c of chunks) {
        const decoded = tok.decode(c.tokens);
        // llama2.c's decoder drops the leading space of a sequence; SmolLM2's gives the text back verbatim.
        if (name === 'llama2c') assert.ok(c.text === decoded || c.text === ' ' + decoded, `${JSON.stringify(c.text)} vs ${JSON.stringify(decoded)}`);
        else assert.equal(c.text, decoded);
      }
    }
  }
});

test('fixed: the default is 512 tokens; non-ASCII text and runs that split characters', async () => {
  const text = 'Ünïcödé 😀😀 東京は大きい。 ok ' + 'x'.repeat(40) + ' 🎉 end';
  for (const { name, tok } of await tokenizers()) {
    assert.deepEqual(splitDocument(doc, tok), splitDocument(doc, tok, { kind: 'fixed', tokens: 512 }));
    for (const n of [1, 2, 3]) {
      const chunks = splitDocument({ id: 'u', text }, tok, { kind: 'fixed', tokens: n });
      assert.equal(chunks.map((c) => c.text).join(''), text, `${name} ${n}`);
      for (const c of chunks) {
        const lead = c.text.charCodeAt(0);
        assert.ok(!(lead >= 0xdc00 && lead <= 0xdfff), 'never starts inside a surrogate pair');
      }
    }
  }
});

/** [start, end) of every sentence, as sets of offsets. */
function sentenceEdges(text: string) {
  const s = allSentences(text);
  return { starts: new Set(s.map((x) => x.start)), ends: new Set(s.map((x) => x.end)) };
}

test('semantic: at most maxTokens ids, ids are encode(text), cuts only between sentences', async () => {
  const { starts, ends } = sentenceEdges(STORY);
  for (const { name, tok } of await tokenizers()) {
    const longest = Math.max(...allSentences(STORY).map((s) => tok.encode(STORY.slice(s.start, s.end), { addBos: false }).length));
    for (const max of [longest, 64, 200, 4096]) {
      const chunks = splitDocument(doc, tok, { kind: 'semantic', maxTokens: max });
      const msg = `${name}, ${max} tokens`;
      assertCommon(STORY, chunks);
      assertTrimmedCover(STORY, chunks);
      for (const c of chunks) {
        assert.ok(c.tokens.length <= max, `${msg}: ${c.tokens.length} ids`);
        assert.deepEqual(c.tokens, tok.encode(c.text, { addBos: false }));
        assert.ok(starts.has(c.start) && ends.has(c.end), `${msg}: ${JSON.stringify(c.text)} cuts a sentence`);
      }
      if (max === 4096) assert.equal(chunks.length, 1, 'everything fits in one chunk');
    }
  }
});

test('semantic: whole passages stay together when each fits', async () => {
  const p = (w: string) => `The ${w} cat sat on the mat. It was a sunny day. The ${w} dog slept.`;
  const text = [p('red'), p('blue'), p('green')].join('\n\n');
  for (const { name, tok } of await tokenizers()) {
    const sizes = text.split('\n\n').map((x) => tok.encode(x, { addBos: false }).length);
    const max = Math.max(...sizes) + 4; // one passage fits, two do not
    const chunks = splitDocument({ id: 'p', text }, tok, { kind: 'semantic', maxTokens: max });
    assert.deepEqual(chunks.map((c) => c.text), text.split('\n\n'), name);
  }
});

test('semantic: a sentence longer than the budget falls back to runs of its ids', async () => {
  const long = 'The little dog ran' + ' and ran and jumped over the green hill and the blue river'.repeat(4) + '.';
  const text = `A short start. ${long} A short end.`;
  for (const { name, tok } of await tokenizers()) {
    const max = 24;
    const chunks = splitDocument({ id: 'l', text }, tok, { kind: 'semantic', maxTokens: max });
    assertCommon(text, chunks, 'l');
    assert.equal(chunks[0].text, 'A short start.', name);
    assert.equal(chunks.at(-1)!.text, 'A short end.', name);
    const forced = chunks.slice(1, -1);
    const ids = tok.encode(long, { addBos: false });
    assert.equal(forced.length, Math.ceil(ids.length / max), name);
    assert.deepEqual(forced.flatMap((c) => c.tokens), ids, `${name}: the runs are the sentence's ids`);
    forced.forEach((c, i) => i < forced.length - 1 && assert.equal(c.tokens.length, max));
    assert.equal(forced.map((c) => c.text).join(''), long, `${name}: the runs cover the sentence`);
  }
});

test('boundaries: sorted, deduplicated, clamped, snapped to whitespace', async () => {
  const text = 'Alpha beta gamma.\n\nDelta epsilon zeta eta theta. Iota kappa lambda mu.';
  const inWord = text.indexOf('epsilon') + 3; // "eps|ilon": 4 characters from the space before, 4 from the one after
  const expected = ['Alpha beta gamma.', 'Delta', 'epsilon zeta eta theta.', 'Iota kappa lambda mu.'];
  for (const { name, tok } of await tokenizers()) {
    const offsets = [text.indexOf('Iota'), inWord, -5, 1e9, NaN, text.indexOf('Delta') - 1, text.indexOf('Iota'), 0];
    const chunks = splitDocument({ id: 'b', text }, tok, { kind: 'boundaries', offsets });
    assertCommon(text, chunks, 'b');
    assertTrimmedCover(text, chunks);
    assert.deepEqual(chunks.map((c) => c.text), expected, name);
    for (const c of chunks) assert.deepEqual(c.tokens, tok.encode(c.text, { addBos: false }));
    // Inside a long word with no whitespace nearby the cut stays where it was asked.
    const word = 'x'.repeat(40);
    const cut = splitDocument({ id: 'w', text: word }, tok, { kind: 'boundaries', offsets: [20] });
    assert.deepEqual(cut.map((c) => [c.start, c.end]), [[0, 20], [20, 40]]);
    assert.deepEqual(splitDocument({ id: 'n', text }, tok, { kind: 'boundaries', offsets: [] }).map((c) => c.text), [text]);
  }
});

test('document: one trimmed chunk', async () => {
  for (const { tok } of await tokenizers()) {
    const chunks = splitDocument({ id: 'd', text: `\n  ${STORY}\n\n` }, tok, { kind: 'document' });
    assert.equal(chunks.length, 1);
    assert.equal(chunks[0].text, STORY);
    assert.equal(chunks[0].start, 3);
    assert.deepEqual(chunks[0].tokens, tok.encode(STORY, { addBos: false }));
  }
});

test('deterministic', async () => {
  const modes = [{ kind: 'fixed', tokens: 16 }, { kind: 'semantic', maxTokens: 50 }, { kind: 'document' }, { kind: 'boundaries', offsets: [100, 300] }] as const;
  for (const { tok } of await tokenizers()) {
    for (const m of modes) {
      const a: Chunk[] = splitDocument(doc, tok, m);
      assert.deepEqual(splitDocument({ ...doc }, tok, m), a);
    }
  }
});

test('errors: empty, whitespace-only, huge, bad modes', async () => {
  const [{ tok }] = await tokenizers();
  for (const text of ['', ' \n\t \r\n ']) {
    assert.throws(() => splitDocument({ id: 'e.txt', text }, tok), (e: Error) => e instanceof EmptyDocumentError && /"e\.txt" is empty/.test(e.message));
  }
  assert.throws(() => splitDocument({ id: 'big', text: 'a'.repeat(101) }, tok, { kind: 'document' }, { maxDocumentChars: 100 }),
    (e: Error) => e instanceof DocumentTooLargeError && /101 characters, more than the limit of 100/.test(e.message));
  // The default limit is 5,000,000 characters, checked before anything is tokenized.
  assert.throws(() => splitDocument({ id: 'huge', text: ' '.repeat(5_000_001) }, tok), DocumentTooLargeError);
  assert.throws(() => splitDocument(doc, tok, { kind: 'fixed', tokens: 0 }), SplitError);
  assert.throws(() => splitDocument(doc, tok, { kind: 'semantic', maxTokens: 2.5 }), SplitError);
  assert.throws(() => splitDocument(doc, tok, { kind: 'nope' } as never), /Unknown split mode "nope"/);
});

test('binary input is refused with a clear error before splitting', () => {
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
  assert.throws(() => decodeDocumentBytes('pic.png', png), (e: Error) => e instanceof BinaryDocumentError && /"pic\.png" does not look like text \(it contains NUL bytes/.test(e.message));
  const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('héllo')]);
  assert.equal(decodeDocumentBytes('t.txt', bom), 'héllo');
});

test('text that is not UTF-8 is read as Windows-1252 (Latin-1) and says so; binaries are still refused', () => {
  // French prose saved by a Western editor: 12% of its bytes are accents (once refused as "not valid UTF-8"), with
  // the curly quotes and euro sign that Windows-1252 puts in 0x80-0x9f.
  const french = '\u201cÉlève à l\u2019école\u201d: été, hôtel, façade, naïve, où, déjà vu \u2014 12 \u20ac.';
  const bytes = Uint8Array.from(french, (ch) => ({ '\u201c': 0x93, '\u201d': 0x94, '\u2019': 0x92, '\u2014': 0x97, '\u20ac': 0x80 } as Record<string, number>)[ch] ?? ch.charCodeAt(0));
  assert.ok(bytes.every((b) => b < 0x100));
  assert.deepEqual(decodeText('fr.txt', bytes), { text: french, encoding: 'Windows-1252' });
  assert.equal(decodeDocumentBytes('fr.txt', bytes), french);
  // UTF-8 stays UTF-8; mostly-UTF-8 text with one bad byte too (the byte becomes U+FFFD).
  const utf8 = new TextEncoder().encode(french);
  assert.deepEqual(decodeText('u.txt', utf8), { text: french, encoding: 'UTF-8' });
  const bad = Uint8Array.from([...utf8.subarray(0, 10), 0xff, ...utf8.subarray(10)]);
  assert.equal(decodeText('u.txt', bad).encoding, 'UTF-8');
  assert.equal(decodeText('u.txt', bad).text.replace('\ufffd', ''), french);
  // Binaries without a NUL byte are still refused: random bytes, and random high bytes.
  let x = 7;
  const rnd = () => (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  const noise = Uint8Array.from({ length: 8192 }, () => rnd() || 1);
  assert.throws(() => decodeText('a.bin', noise), (e: Error) => e instanceof BinaryDocumentError && /control characters/.test(e.message));
  const high = Uint8Array.from({ length: 8192 }, () => rnd() | 0x80);
  assert.throws(() => decodeText('b.txt', high), (e: Error) => e instanceof BinaryDocumentError && /not valid UTF-8, and \d+% are outside ASCII/.test(e.message));
});
