/**
 * Needle in a haystack: one made-up fact inserted at a chosen depth into
 * project-generated filler text of a given token length, split into chunks
 * of at most `chunkTokens` tokens (512 by default). The question asks for the
 * fact; scored by F1.
 */
import type { EvalCase } from '../dataset';
import { Rng } from '../rng';
import { ChunkPacker, type TokenCounter } from './pack';
import { fillerSentence, madeUpWord, personName, townName } from './text';

export interface NeedleOptions {
  seed: number;
  /** Context lengths in tokens. */
  lengths: number[];
  /** Depths in [0, 1]: the share of the context before the needle. */
  depths: number[];
  chunkTokens: number;
  count: TokenCounter;
  tokenizerName: string;
}

const THINGS = ['blue box', 'garden shed', 'music room', 'red bicycle lock', 'attic door', 'secret diary', 'boat house'];
const COLORS = ['green', 'orange', 'silver', 'purple', 'yellow', 'golden', 'pink'];
const OBJECTS = ['teapot', 'umbrella', 'kite', 'lantern', 'drum', 'compass', 'feather', 'spoon'];
const FURNITURE = ['bed', 'kitchen table', 'big sofa', 'stairs', 'desk'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

/** A fact, the question that asks for it, and its answers. */
export function makeNeedle(rng: Rng): { fact: string; question: string; answers: string[] } {
  const kind = rng.int(0, 2);
  if (kind === 0) {
    const who = personName(rng);
    const thing = rng.pick(THINGS);
    const word = madeUpWord(rng, 2).toLowerCase();
    return {
      fact: `The password for ${who}'s ${thing} is ${word}.`,
      question: `What is the password for ${who}'s ${thing}?`,
      answers: [word],
    };
  }
  if (kind === 1) {
    const who = personName(rng);
    const color = rng.pick(COLORS);
    const obj = rng.pick(OBJECTS);
    const where = rng.pick(FURNITURE);
    return {
      fact: `${who} keeps a ${color} ${obj} under the ${where}.`,
      question: `What does ${who} keep under the ${where}?`,
      answers: [`a ${color} ${obj}`],
    };
  }
  const town = townName(rng);
  const day = rng.pick(DAYS);
  return {
    fact: `The best day to visit the town of ${town} is ${day}.`,
    question: `What is the best day to visit the town of ${town}?`,
    answers: [day],
  };
}

/** One case: filler up to `length` tokens with the needle at `depth`. */
export function needleCase(rng: Rng, length: number, depth: number, o: Pick<NeedleOptions, 'chunkTokens' | 'count' | 'tokenizerName'>, id: string): EvalCase {
  const needle = makeNeedle(rng.fork('needle'));
  const filler = rng.fork('filler');
  const packer = new ChunkPacker(o.chunkTokens, o.count);
  // Exactly ceil(length / chunkTokens) chunks, each filled with whole sentences up to chunkTokens.
  const nChunks = Math.ceil(length / o.chunkTokens);
  const needleTokens = o.count(needle.fact);
  const insertAt = depth * Math.max(0, length - needleTokens);
  let needleOffset = -1;
  let sentences = 0;
  let paragraph = filler.int(4, 7);
  const sep = () => (sentences > 0 && sentences % paragraph === 0 ? '\n\n' : ' ');
  const addNeedle = () => {
    needleOffset = packer.total;
    packer.add(needle.fact, sep());
    sentences++;
  };
  for (;;) {
    if (needleOffset < 0 && packer.total >= insertAt) {
      addNeedle();
      continue;
    }
    const s = fillerSentence(filler);
    const sp = sep();
    const inLast = packer.chunkCount >= nChunks;
    if (inLast && !packer.fits(s, sp)) break;
    // Keep room for the needle in the last chunk when it is still to come.
    if (inLast && needleOffset < 0 && !packer.fits(`${s}${sp}${needle.fact}`, sp)) break;
    packer.add(s, sp);
    sentences++;
    if (sentences % paragraph === 0) paragraph = filler.int(4, 7);
  }
  if (needleOffset < 0) addNeedle();
  const { chunks, tokens } = packer.finish();
  const contextTokens = tokens.reduce((a, b) => a + b, 0);
  return {
    id, chunks, question: needle.question, answers: needle.answers, metric: 'f1',
    meta: { task: 'needle', length, depth, needle_token_offset: needleOffset, context_tokens: contextTokens, chunk_tokens: tokens, tokenizer: o.tokenizerName },
  };
}

export function generateNeedle(o: NeedleOptions): EvalCase[] {
  const out: EvalCase[] = [];
  for (const length of o.lengths) {
    for (const depth of o.depths) {
      const id = `needle-${length}-d${Math.round(depth * 100)}`;
      out.push(needleCase(new Rng(`${o.seed}:${id}`), length, depth, o, id));
    }
  }
  return out;
}
