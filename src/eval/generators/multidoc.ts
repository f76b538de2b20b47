/**
 * Multi-document QA over a made-up world: people (birthplace, occupation,
 * employer), companies (founder, product, head office) and towns. Each
 * document describes one entity and is one chunk; a case holds the
 * documents that support its answer plus distractors about other entities of
 * the same world, in a random order. One-hop questions need one document,
 * two-hop questions chain two (e.g. the founder's birthplace). Scored by F1.
 */
import type { EvalCase } from '../dataset';
import { Rng } from '../rng';
import { companyName, distinctNames, fillerSentence, madeUpWord, townName } from './text';

export interface MultiDocOptions {
  seed: number;
  /** Number of cases; half one-hop, half two-hop. */
  n: number;
  /** Documents per case (supporting + distractors). */
  docs: number;
}

const JOBS = ['carpenter', 'nurse', 'baker', 'sailor', 'teacher', 'map maker', 'beekeeper', 'tailor', 'potter', 'clock maker'];
const HOBBIES = ['chess', 'kite flying', 'bird watching', 'rowing', 'knitting', 'stargazing', 'gardening', 'fishing'];
const PRODUCTS = ['wooden toys', 'rope ladders', 'glass jars', 'paper lanterns', 'garden tools', 'wool blankets', 'copper kettles', 'rain boots', 'wall clocks', 'fishing nets'];

interface Person { name: string; first: string; born: string; lives: string; job: string; employer: number; hobby: string }
interface Company { name: string; founder: number; product: string; office: string; year: number }

function world(rng: Rng) {
  const taken = new Set<string>();
  const towns = distinctNames(rng, 6, () => townName(rng), taken);
  const firsts = distinctNames(rng, 8, () => madeUpWord(rng, rng.int(1, 2)), taken);
  const lasts = distinctNames(rng, 8, () => madeUpWord(rng, rng.int(2, 3)), taken);
  const people: Person[] = firsts.map((first, i) => ({
    name: `${first} ${lasts[i]}`, first, born: rng.pick(towns), lives: rng.pick(towns), job: rng.pick(JOBS), employer: 0, hobby: rng.pick(HOBBIES),
  }));
  const founders = rng.sample(people.map((_, i) => i), 4);
  const products = rng.sample(PRODUCTS, 4);
  const companies: Company[] = distinctNames(rng, 4, () => companyName(rng), taken).map((name, i) => ({
    name, founder: founders[i], product: products[i], office: rng.pick(towns), year: rng.int(1850, 1990),
  }));
  for (const p of people) p.employer = rng.int(0, companies.length - 1);
  return { towns, people, companies };
}

function personDoc(rng: Rng, p: Person, companies: Company[]): string {
  const lines = [
    `${p.name} is a ${p.job} who was born in ${p.born}.`,
    `${p.first} works for ${companies[p.employer].name} and lives in ${p.lives}.`,
    `In free time, ${p.first} enjoys ${p.hobby}.`,
  ];
  if (rng.float() < 0.7) lines.splice(rng.int(1, lines.length), 0, fillerSentence(rng));
  return `${p.name}\n${lines.join(' ')}`;
}

function companyDoc(rng: Rng, c: Company, people: Person[]): string {
  const lines = [
    `${c.name} is a company that makes ${c.product}.`,
    `It was founded in ${c.year} by ${people[c.founder].name}.`,
    `Its head office is in ${c.office}.`,
  ];
  if (rng.float() < 0.7) lines.splice(rng.int(1, lines.length), 0, fillerSentence(rng));
  return `${c.name}\n${lines.join(' ')}`;
}

type Doc = { key: string; text: string };

export function multiDocCase(rng: Rng, twoHop: boolean, docsPerCase: number, id: string): EvalCase {
  const w = world(rng.fork('world'));
  const texts = rng.fork('docs');
  const docs = new Map<string, Doc>();
  w.people.forEach((p, i) => docs.set(`p${i}`, { key: `p${i}`, text: personDoc(texts, p, w.companies) }));
  w.companies.forEach((c, i) => docs.set(`c${i}`, { key: `c${i}`, text: companyDoc(texts, c, w.people) }));
  let question: string;
  let answer: string;
  let support: string[];
  let type: string;
  const pi = rng.int(0, w.people.length - 1);
  const ci = rng.int(0, w.companies.length - 1);
  const p = w.people[pi];
  const c = w.companies[ci];
  const kind = rng.int(0, twoHop ? 2 : 3);
  if (!twoHop) {
    type = ['born', 'founder', 'product', 'employer'][kind];
    if (kind === 0) [question, answer, support] = [`In which town was ${p.name} born?`, p.born, [`p${pi}`]];
    else if (kind === 1) [question, answer, support] = [`Who founded ${c.name}?`, w.people[c.founder].name, [`c${ci}`]];
    else if (kind === 2) [question, answer, support] = [`What does ${c.name} make?`, c.product, [`c${ci}`]];
    else [question, answer, support] = [`Which company does ${p.name} work for?`, w.companies[p.employer].name, [`p${pi}`]];
  } else {
    type = ['founder-born', 'employer-product', 'employer-office'][kind];
    if (kind === 0) {
      const f = w.people[c.founder];
      [question, answer, support] = [`In which town was the founder of ${c.name} born?`, f.born, [`c${ci}`, `p${c.founder}`]];
    } else if (kind === 1) {
      const e = w.companies[p.employer];
      [question, answer, support] = [`What does the company that ${p.name} works for make?`, e.product, [`p${pi}`, `c${p.employer}`]];
    } else {
      const e = w.companies[p.employer];
      [question, answer, support] = [`In which town is the head office of the company ${p.name} works for?`, e.office, [`p${pi}`, `c${p.employer}`]];
    }
  }
  const others = rng.sample([...docs.keys()].filter((k) => !support.includes(k)), Math.max(0, docsPerCase - support.length));
  const chosen = rng.shuffle([...support, ...others]);
  return {
    id, chunks: chosen.map((k) => docs.get(k)!.text), question, answers: [answer], metric: 'f1',
    meta: { task: 'multidoc', hops: twoHop ? 2 : 1, type, supporting: support.map((k) => chosen.indexOf(k)) },
  };
}

export function generateMultiDoc(o: MultiDocOptions): EvalCase[] {
  const out: EvalCase[] = [];
  for (let i = 0; i < o.n; i++) {
    const twoHop = i % 2 === 1;
    const id = `multidoc-${String(i).padStart(3, '0')}-${twoHop ? '2hop' : '1hop'}`;
    out.push(multiDocCase(new Rng(`${o.seed}:${id}`), twoHop, o.docs, id));
  }
  return out;
}
