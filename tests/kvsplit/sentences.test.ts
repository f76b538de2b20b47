/** KVSplit's text units (passages, paragraphs, sentences) and binary detection, without a tokenizer. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allSentences, binaryReason, looksBinary, paragraphs, passages } from '../../src/kvsplit';

const texts = (t: string, spans: { start: number; end: number }[]) => spans.map((s) => t.slice(s.start, s.end));
const sents = (t: string) => texts(t, allSentences(t));

test('sentences: terminators, closing quotes, abbreviations, decimals, initials', () => {
  assert.deepEqual(sents('Hello there. How are you? I am fine! Great…  Next one.'), ['Hello there.', 'How are you?', 'I am fine!', 'Great…', 'Next one.']);
  assert.deepEqual(sents('Mr. Smith met Dr. Jones, e.g. at noon. They talked i.e. about pi, which is 3.14. Done.'), [
    'Mr. Smith met Dr. Jones, e.g. at noon.', 'They talked i.e. about pi, which is 3.14.', 'Done.',
  ]);
  assert.deepEqual(sents('"Can I play?" she asked. "Yes!" He smiled.'), ['"Can I play?" she asked.', '"Yes!"', 'He smiled.']);
  assert.deepEqual(sents('He said “stop.” Then he left (quietly.) The end'), ['He said “stop.”', 'Then he left (quietly.)', 'The end']);
  assert.deepEqual(sents('J. R. R. Tolkien wrote it in the U.S. and it sold well. Item No. 5 is here.'), [
    'J. R. R. Tolkien wrote it in the U.S. and it sold well.', 'Item No. 5 is here.',
  ]);
  assert.deepEqual(sents('Wait... what? Really... Yes.'), ['Wait... what?', 'Really...', 'Yes.']);
  assert.deepEqual(sents('東京は大きい。本当に！すごい'), ['東京は大きい。', '本当に！', 'すごい']);
  assert.deepEqual(sents('No terminator at all'), ['No terminator at all']);
});

test('passages, paragraphs: blank lines; line breaks inside a sentence do not count', () => {
  const t = 'First passage line one.\nLine two is\nwrapped here.\n \n\nSecond passage:\n- item one\n- item two\n1. numbered';
  const ps = passages(t);
  assert.deepEqual(texts(t, ps), ['First passage line one.\nLine two is\nwrapped here.', 'Second passage:\n- item one\n- item two\n1. numbered']);
  assert.deepEqual(texts(t, paragraphs(t, ps[0])), ['First passage line one.', 'Line two is\nwrapped here.']);
  assert.deepEqual(texts(t, paragraphs(t, ps[1])), ['Second passage:', '- item one', '- item two', '1. numbered']);
  assert.deepEqual(sents('1. First item.\n2. Second item.'), ['1. First item.', '2. Second item.']);
  assert.deepEqual(sents('a\r\n\r\nb'), ['a', 'b']);
});

test('looksBinary: NUL bytes, control characters, invalid UTF-8; text passes', () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  assert.equal(looksBinary(enc('Plain text with ünïcödé and emoji 😀.\n\tTabbed\r\n')), false);
  assert.equal(looksBinary(new Uint8Array()), false);
  assert.equal(looksBinary(Uint8Array.from([...enc('abc'), 0, ...enc('def')])), true);
  assert.match(binaryReason(Uint8Array.from([...enc('abc'), 0]))!, /NUL bytes \(first at byte 3\)/);
  assert.match(binaryReason(Uint8Array.from({ length: 100 }, (_, i) => (i % 3 ? 0x41 : 0x01)))!, /control characters/);
  // Latin-1 prose with a few accents is not binary; random high bytes are.
  const latin1 = Uint8Array.from('Caf\xe9 au lait, na\xefve r\xe9sum\xe9 of the day, and more plain words here.', (c) => c.charCodeAt(0));
  assert.equal(looksBinary(latin1), false);
  let x = 12345;
  const noise = Uint8Array.from({ length: 4096 }, () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 24) | 0x80);
  assert.match(binaryReason(noise)!, /not valid UTF-8/);
  assert.match(binaryReason(Uint8Array.from([0xff, 0xfe, 0x41, 0]))!, /UTF-16/);
  // A multi-byte character cut by the 64 KiB sample's end is not held against the text.
  const long = enc('é'.repeat(40000));
  assert.equal(looksBinary(long), false);
});
