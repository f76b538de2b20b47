/**
 * Few-shot dialogue summarisation in SAMSum's shape: the context is a run
 * of example dialogues, each followed by its summary, packed into chunks of
 * at most `chunkTokens` tokens (whole examples per chunk); the question is a
 * new dialogue to summarise; the reference is its summary. Dialogues are
 * built from a handful of everyday scenarios with varied wording. Scored by
 * Rouge-L.
 */
import type { EvalCase } from '../dataset';
import { Rng } from '../rng';
import { ChunkPacker, type TokenCounter } from './pack';
import { distinctNames, madeUpWord } from './text';

export interface SamsumOptions {
  seed: number;
  n: number;
  /** Example dialogues in the context. */
  shots: number;
  chunkTokens: number;
  count: TokenCounter;
  tokenizerName: string;
}

export const SAMSUM_INSTRUCTION = 'Summarize the dialogue into a few short sentences. The following are some examples.';

const PLACES = ['library', 'bakery', 'park', 'station', 'cinema', 'market', 'pool', 'museum'];
const TIMES = ['5 pm', '6 pm', '7 pm', 'noon', '10 am', '3 pm', '8 pm'];
const ITEMS = ['the notes', 'an umbrella', 'the tickets', 'some snacks', 'the map', 'a blanket', 'the camera'];
const LOST = ['key ring', 'scarf', 'phone charger', 'water bottle', 'blue hat', 'library card'];
const BORROW = ['ladder', 'bike pump', 'drill', 'tent', 'big pot', 'guitar'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const REASONS = ['the traffic', 'a flat tyre', 'the rain', 'a late bus', 'a long meeting'];
const GROCERIES = ['milk', 'eggs', 'bread', 'apples', 'rice', 'cheese', 'tomatoes', 'butter'];

export interface Dialogue { lines: string[]; summary: string }

export function makeDialogue(rng: Rng, a: string, b: string): Dialogue {
  const say = (who: string, text: string) => `${who}: ${text}`;
  const kind = rng.int(0, 4);
  if (kind === 0) {
    const place = rng.pick(PLACES), time = rng.pick(TIMES), item = rng.pick(ITEMS);
    const other = rng.pick(TIMES.filter((t) => t !== time));
    return {
      lines: [
        say(a, rng.pick([`Are we still meeting today?`, `Do you want to meet later?`])),
        say(b, `Sure. The ${place} at ${other}?`),
        say(a, rng.pick([`Can we make it ${time}? I finish late.`, `${other} is hard for me. What about ${time}?`])),
        say(b, rng.pick([`OK, ${time} works.`, `Fine, see you at ${time}.`])),
        say(a, `Great. I will bring ${item}.`),
      ],
      summary: `${a} and ${b} will meet at the ${place} at ${time}. ${a} will bring ${item}.`,
    };
  }
  if (kind === 1) {
    const item = rng.pick(LOST), place = rng.pick(PLACES);
    return {
      lines: [
        say(a, rng.pick([`Have you seen my ${item}?`, `I can't find my ${item} anywhere.`])),
        say(b, `Did you check your bag?`),
        say(a, `Yes, twice.`),
        say(b, rng.pick([`I think I saw it at the ${place} yesterday.`, `Wait, you left it at the ${place} yesterday!`])),
        say(a, rng.pick([`Thanks, I will go and look.`, `Oh no. I will go back there.`])),
      ],
      summary: `${a} lost the ${item}. ${b} saw it at the ${place} yesterday. ${a} will go there.`,
    };
  }
  if (kind === 2) {
    const thing = rng.pick(BORROW), day = rng.pick(DAYS);
    return {
      lines: [
        say(a, rng.pick([`Could I borrow your ${thing}?`, `Hi! Do you still have that ${thing}?`])),
        say(b, rng.pick([`Sure, what for?`, `Yes. Do you need it?`])),
        say(a, `I want to fix something at home this week.`),
        say(b, `I can drop it off on ${day}.`),
        say(a, `Perfect, thank you!`),
      ],
      summary: `${b} will lend ${a} the ${thing} and drop it off on ${day}.`,
    };
  }
  if (kind === 3) {
    const mins = rng.pick([10, 15, 20, 30, 45]), reason = rng.pick(REASONS);
    return {
      lines: [
        say(a, rng.pick([`Sorry, I'm running late.`, `I'm going to be late, sorry!`])),
        say(b, `How late?`),
        say(a, `About ${mins} minutes, because of ${reason}.`),
        say(b, rng.pick([`No problem, I'll wait.`, `OK, I'll order a coffee.`])),
      ],
      summary: `${a} will be ${mins} minutes late because of ${reason}. ${b} will wait.`,
    };
  }
  const [x, y] = rng.sample(GROCERIES, 2);
  return {
    lines: [
      say(a, rng.pick([`Are you at the shop?`, `Are you going shopping?`])),
      say(b, `Yes, need anything?`),
      say(a, `Could you get ${x} and ${y}?`),
      say(b, rng.pick([`Sure, anything else?`, `OK!`])),
      say(a, `No, that's all. Thanks!`),
    ],
    summary: `${b} will buy ${x} and ${y} for ${a}.`,
  };
}

export function samsumCase(rng: Rng, o: Pick<SamsumOptions, 'shots' | 'chunkTokens' | 'count' | 'tokenizerName'>, id: string): EvalCase {
  const names = rng.fork('names');
  const people = distinctNames(names, 12, () => madeUpWord(names, names.int(1, 2)));
  const packer = new ChunkPacker(o.chunkTokens, o.count);
  const talk = rng.fork('dialogues');
  for (let i = 0; i < o.shots; i++) {
    const [a, b] = talk.sample(people, 2);
    const d = makeDialogue(talk, a, b);
    packer.add(`Dialogue: ${d.lines.join('\n')}\nSummary: ${d.summary}`, '\n\n');
  }
  const [a, b] = talk.sample(people, 2);
  const target = makeDialogue(talk, a, b);
  const { chunks, tokens } = packer.finish();
  return {
    id, chunks, question: `Dialogue: ${target.lines.join('\n')}\nSummary:`, answers: [target.summary], metric: 'rougeL',
    instruction: SAMSUM_INSTRUCTION,
    meta: { task: 'samsum', shots: o.shots, context_tokens: tokens.reduce((s, t) => s + t, 0), chunk_tokens: tokens, tokenizer: o.tokenizerName },
  };
}

export function generateSamsum(o: SamsumOptions): EvalCase[] {
  return Array.from({ length: o.n }, (_, i) => {
    const id = `samsum-${String(i).padStart(3, '0')}`;
    return samsumCase(new Rng(`${o.seed}:${id}`), o, id);
  });
}
