/**
 * Project-written building blocks for the generated datasets: a small
 * grammar of plain, story-like filler sentences, and made-up names built
 * from syllables (people, towns, companies), so no text comes from any
 * outside corpus and no name should belong to a real entity.
 */
import type { Rng } from '../rng';

const SUBJECTS = [
  'The old farmer', 'A little girl', 'The baker', 'Two friends', 'The teacher', 'A tired dog', 'The children',
  'A quiet boy', 'The fisherman', 'Grandma', 'The mail carrier', 'A small cat', 'The twins', 'The painter',
  'A young fox', 'The shopkeeper', 'Three ducks', 'The gardener', 'A brave mouse', 'The neighbours',
];
const VERBS = [
  'walked slowly', 'sang a happy song', 'looked at the sky', 'planted some flowers', 'cleaned the windows',
  'carried a basket of apples', 'counted the clouds', 'fixed an old chair', 'read a long book', 'baked fresh bread',
  'fed the birds', 'painted a wooden fence', 'picked some berries', 'played a little game', 'swept the floor',
  'watched the boats', 'folded the blankets', 'wrote a short letter', 'collected smooth stones', 'waited for a friend',
  'drank a cup of tea', 'climbed a gentle hill', 'drew a picture of a house', 'tidied the shelves', 'hummed a tune',
];
const PLACES = [
  'near the river', 'in the garden', 'by the old bridge', 'at the market', 'under a tall tree', 'on the porch',
  'beside the pond', 'in the kitchen', 'at the edge of the forest', 'behind the barn', 'on the hill', 'in the park',
  'by the window', 'at the train station', 'in the meadow', 'near the school', 'on the beach', 'in the library',
  'next to the bakery', 'along the path',
];
const TIMES = [
  'before lunch', 'every morning', 'after the rain', 'on a windy day', 'in the evening', 'late at night',
  'on Sunday', 'at sunrise', 'after school', 'once a week', 'during the summer', 'when the bells rang',
  'while it snowed', 'in the afternoon', 'before going to bed',
];
const MOODS = [
  'It was a quiet day.', 'Nobody was in a hurry.', 'The wind was soft and warm.', 'Everything smelled of rain.',
  'The sun came out for a while.', 'It was a good day to rest.', 'A bell rang far away.', 'The clouds moved slowly.',
  'Somewhere a dog barked twice.', 'The air was cool and fresh.', 'Leaves fell on the road.', 'The town was calm.',
];
const FEELINGS = ['happy', 'sleepy', 'calm', 'proud', 'curious', 'cheerful', 'hungry', 'glad', 'patient', 'thankful'];

/** One filler sentence. */
export function fillerSentence(rng: Rng): string {
  const r = rng.float();
  if (r < 0.12) return rng.pick(MOODS);
  if (r < 0.24) return `${rng.pick(SUBJECTS)} felt ${rng.pick(FEELINGS)} ${rng.pick(PLACES)}.`;
  if (r < 0.55) return `${rng.pick(SUBJECTS)} ${rng.pick(VERBS)} ${rng.pick(PLACES)}.`;
  return `${rng.pick(SUBJECTS)} ${rng.pick(VERBS)} ${rng.pick(PLACES)} ${rng.pick(TIMES)}.`;
}

const ONSETS = ['b', 'br', 'd', 'dr', 'f', 'g', 'gr', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 'sh', 't', 'tr', 'v', 'z', 'th', 'c', 'j', 'w'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou', 'y'];
const CODAS = ['', '', '', 'n', 'r', 'l', 's', 'th', 'nd', 'm', 'x', 'rk', 'st'];

/** A made-up word of `syllables` syllables, capitalised. */
export function madeUpWord(rng: Rng, syllables: number): string {
  let w = '';
  for (let i = 0; i < syllables; i++) {
    w += rng.pick(ONSETS) + rng.pick(VOWELS);
    if (i === syllables - 1 || rng.float() < 0.3) w += rng.pick(CODAS);
  }
  return w[0].toUpperCase() + w.slice(1);
}

/** Draws names until `n` distinct ones are found (none equal to one in `taken`, which is updated). */
export function distinctNames(rng: Rng, n: number, make: () => string, taken = new Set<string>()): string[] {
  const out: string[] = [];
  for (let guard = 0; out.length < n; guard++) {
    if (guard > n * 1000) throw new Error('distinctNames: could not find enough distinct names');
    const name = make();
    if (taken.has(name)) continue;
    taken.add(name);
    out.push(name);
  }
  return out;
}

export const personName = (rng: Rng) => `${madeUpWord(rng, rng.int(1, 2))} ${madeUpWord(rng, rng.int(2, 3))}`;
export const firstName = (rng: Rng) => madeUpWord(rng, rng.int(1, 2));
export const townName = (rng: Rng) => madeUpWord(rng, rng.int(2, 3)) + rng.pick(['', '', 'ton', 'by', 'mere', 'field', 'wick']);
export const companyName = (rng: Rng) =>
  `${madeUpWord(rng, 2)} ${rng.pick(['Tools', 'Foods', 'Works', 'Textiles', 'Toys', 'Lamps', 'Boats', 'Paper', 'Glass', 'Clocks'])}`;
