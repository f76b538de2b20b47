/**
 * What the accuracy tables and the sinks reports answer, computed from the
 * same JSON as the rest of docs/RESULTS.md: does `naive` lose accuracy
 * against `full`, does `legolink:16` stay within 5% of `full`, and do chunk
 * starts draw the attention of a sequence start (`npm run sinks`). Every
 * verdict is read off the numbers; nothing here knows what a model "should"
 * show.
 *
 * The gaps are paired: the same cases answered by both algorithms, with a
 * 95% percentile interval from a seeded bootstrap over cases (2000
 * resamples), so a difference of a few cases on a small set reads as what it
 * is.
 */
import { answeredByAll, caseRecall, hasRecall, type CaseResult, type EvalResults } from './runner';
import type { SinkReport } from './sinks';
import { Rng } from './rng';
import { mean } from './stats';
import { mdTable } from './markdown';

/** The mean score of `algorithm` against `reference` over the cases both answered, with a bootstrap interval of the difference. */
export interface PairedGap {
  n: number;
  reference: number;
  algorithm: number;
  /** algorithm / reference (NaN when the reference scored 0). */
  ratio: number;
  /** Mean of algorithm − reference, and its 95% bootstrap interval. */
  diff: number;
  lo: number;
  hi: number;
}

/** What a case is scored by: its metric's score (F1 or Rouge-L), or its answer recall (null for summaries). */
export type CaseValue = (c: CaseResult) => number | null;
export const byScore: CaseValue = (c) => c.score;
export const byRecall: CaseValue = caseRecall;

export function pairedGap(cases: readonly CaseResult[], algorithm: string, reference: string, value: CaseValue = byScore, resamples = 2000): PairedGap | null {
  const valued = (al: string) => cases.filter((c) => c.algorithm === al).flatMap((c) => {
    const v = value(c);
    return v === null ? [] : [[c.id, v] as const];
  });
  const ref = new Map(valued(reference));
  const pairs = valued(algorithm).filter(([id]) => ref.has(id)).map(([id, v]) => [v, ref.get(id)!] as const);
  if (!pairs.length) return null;
  const diffs = pairs.map(([a, r]) => a - r);
  const rng = new Rng(`gap:${algorithm}:${reference}:${pairs.length}`);
  const boot: number[] = [];
  for (let b = 0; b < resamples; b++) {
    let s = 0;
    for (let i = 0; i < diffs.length; i++) s += diffs[Math.floor(rng.float() * diffs.length)];
    boot.push(s / diffs.length);
  }
  boot.sort((x, y) => x - y);
  const a = mean(pairs.map(([x]) => x)), r = mean(pairs.map(([, y]) => y));
  return {
    n: pairs.length, reference: r, algorithm: a, ratio: r > 0 ? a / r : NaN, diff: a - r,
    lo: boot[Math.floor(0.025 * (resamples - 1))], hi: boot[Math.ceil(0.975 * (resamples - 1))],
  };
}

/** "loses", "gains" or "no measurable difference", from where the interval lies. */
export function gapVerdict(g: PairedGap): 'loses' | 'gains' | 'no measurable difference' {
  return g.hi < 0 ? 'loses' : g.lo > 0 ? 'gains' : 'no measurable difference';
}

/** The issue's target: legolink:16's accuracy at least 95% of full's (its mean over the same cases). */
export const WITHIN = 0.95;

/** Chunk starts against ordinary tokens of the same chunks, under one algorithm of a sinks report: later chunks (2, 3, …) only. */
export function laterStartRatio(r: SinkReport, algorithm: string): number | null {
  const a = r.algorithms[algorithm];
  if (!a) return null;
  const later = a.per_chunk.filter((c) => c.chunk > 1 && c.cases > 0 && c.token_share > 0);
  if (!later.length) return null;
  // Weighted by the cases that have the chunk; the start share of `sink_tokens` tokens per start token.
  const w = later.reduce((t, c) => t + c.cases, 0);
  return later.reduce((t, c) => t + c.cases * (c.start_share / r.sink_tokens / c.token_share), 0) / w;
}

/** Where chunk starts count as sinks: EPIC's Fig. 4 and Gemma 3 270M's 15-26× (issue 35) are far above this. */
export const SINK_RATIO = 10;

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');
/** "a-b", or "a" when both ends are the same. */
const range = (xs: number[]) => (Math.min(...xs) === Math.max(...xs) ? `${Math.min(...xs)}` : `${Math.min(...xs)}-${Math.max(...xs)}`);
const sgn = (x: number) => (x >= 0 ? `+${f3(x)}` : f3(x));
const gapText = (g: PairedGap) => `${f3(g.algorithm)} vs ${f3(g.reference)} (${sgn(g.diff)}, 95% interval ${sgn(g.lo)} to ${sgn(g.hi)}; ratio ${f2(g.ratio)})`;

/** A model the page already explains as unable to show the gap: stories260K answers no questions, qa-demo has no sink (its card). */
const isToy = (model: string) => /stories|qa-demo/i.test(model);

/** The sinks reports: per algorithm and chunk, the share of the question's attention on each chunk's start against one ordinary token. */
export function sinksSection(reports: { file: string; r: SinkReport }[]): string {
  const lines: string[] = ['## Attention sinks at chunk starts', ''];
  lines.push(`\`npm run sinks\` links each case's chunks with each algorithm and reads back the question rows' attention (softmax, every layer and head): the share that lands on the first token(s) of each chunk, against the mean share of one ordinary token of the same chunk. Under \`naive\` every chunk starts with the BOS it was compiled with, at its place in the prompt; under \`prompt\` (the ordinary prompt) only the prompt's own start has a BOS, so its rows show what an ordinary chunk start draws. Chunk 1 starts the prompt unless a chat template's header comes before it (then its start under naive is a sink out of place too); the summary below counts chunks 2 and later, which never start the prompt. A chunk start that draws ${SINK_RATIO}× or more an ordinary token is counted as a sink here.`, '');
  for (const { file, r } of reports) {
    lines.push(`### ${r.model} · ${(r.data ?? '').replace(/^.*\//, '') || 'data not recorded'}`, '');
    lines.push(`\`${r.command ?? 'npm run sinks'}\` · adapter **${r.adapter}** · ${r.cases} cases · ${r.layers} layers · first ${r.sink_tokens} token(s) of each chunk · \`${file}\``, '');
    const rows: (string | number)[][] = [];
    for (const [al, a] of Object.entries(r.algorithms)) {
      for (const c of a.per_chunk) {
        const ratio = c.token_share > 0 ? c.start_share / r.sink_tokens / c.token_share : NaN;
        rows.push([al, c.chunk, c.cases, c.start_share.toFixed(4), f3(c.chunk_share), c.token_share.toFixed(4), Number.isFinite(ratio) ? ratio.toFixed(1) : '–']);
      }
    }
    lines.push(mdTable(['algorithm', 'chunk', 'cases', 'start share', 'whole-chunk share', 'one ordinary token', 'start / ordinary token'], rows), '');
    const naive = laterStartRatio(r, 'naive');
    if (naive !== null) {
      const others = ['prompt', 'legolink:16', 'full'].flatMap((al) => {
        const x = laterStartRatio(r, al);
        return x === null ? [] : [`${x.toFixed(1)}× under ${al}`];
      });
      lines.push(`Chunks 2 and later under naive: a chunk start draws **${naive.toFixed(1)}×** an ordinary token of its chunk (${naive >= SINK_RATIO ? 'sinks at chunk starts' : `below ${SINK_RATIO}×: no sink worth the name`})${others.length ? `; ${others.join(', ')}` : ''}.`, '');
    }
  }
  return lines.join('\n');
}

/** The two ways a run is scored: its metric (F1, Rouge-L) and, on QA sets, answer recall. */
interface Scoring { name: string; value: CaseValue }
const F1: Scoring = { name: 'accuracy', value: byScore };
const RECALL: Scoring = { name: 'answer recall', value: byRecall };

/** The share of naive's loss that `algorithm` wins back, (it − naive) / (full − naive), where naive lost. */
function wonBack(r: EvalResults, m: Scoring, algorithm = 'legolink:16'): number | null {
  const naive = pairedGap(r.cases, 'naive', 'full', m.value);
  const lego = pairedGap(r.cases, algorithm, 'full', m.value);
  if (!naive || !lego || gapVerdict(naive) !== 'loses') return null;
  return (lego.algorithm - naive.algorithm) / (naive.reference - naive.algorithm);
}

const pct = (x: number) => `${Math.round(100 * x)}%`;

/** One row of a findings table: the run, its full score, naive's gap, legolink:16's ratio, what it won back, the sinks. */
function findingsRow(r: EvalResults, m: Scoring, sinks: SinkReport | undefined): (string | number)[] {
  const naive = pairedGap(r.cases, 'naive', 'full', m.value)!;
  const lego = pairedGap(r.cases, 'legolink:16', 'full', m.value);
  const back = wonBack(r, m);
  const ratio = sinks ? laterStartRatio(sinks, 'naive') : null;
  return [
    `${r.model} · ${r.data.replace(/^.*\//, '')}${r.complete ? '' : ` (partial: ${naive.n} of ${r.cases_planned ?? '?'} cases)`}`, naive.n, f3(naive.reference), `${gapText(naive)}: **${gapVerdict(naive)}**`,
    !lego ? 'not run' : !Number.isFinite(lego.ratio) ? '– (full scored 0)' : `${f2(lego.ratio)} (${lego.ratio >= WITHIN ? 'within 5%' : 'not within 5%'})`,
    back === null ? '–' : pct(back),
    ratio === null ? '–' : `${ratio.toFixed(1)}× (${ratio >= SINK_RATIO ? 'yes' : 'no'})`,
  ];
}

/** The answers to the issue's three questions, per run, then what they mean. */
export function findingsSection(evals: { r: EvalResults }[], sinks: { r: SinkReport }[]): string {
  // A stopped (or still running) evaluation counts only the cases every algorithm answered.
  const runs = evals.filter(({ r }) => r.algorithms.includes('full') && r.algorithms.includes('naive')).map(({ r }) => {
    const done = answeredByAll(r.algorithms, r.cases);
    return { r: { ...r, cases: r.cases.filter((c) => done.has(c.id)) } };
  }).filter(({ r }) => r.cases.length > 0);
  if (!runs.length) return '';
  const sinkOf = (model: string) => sinks.find((s) => s.r.model === model)?.r;
  const lines: string[] = ['## What the accuracy tables show', ''];
  lines.push(`Read off the tables above, per run, over the cases both algorithms answered. *naive vs full* is the mean accuracy of naive against full's, the difference with its 95% bootstrap interval over cases: naive **loses** accuracy only where the whole interval is below zero. *legolink:16 / full* is the ratio of the means; the target is at least ${WITHIN} (within 5% of full). *won back* is the share of naive's loss that legolink:16 recovers, (legolink:16 − naive) / (full − naive), where naive loses. *chunk-start sink* is the sinks report's start / ordinary-token ratio for chunks 2 and later under naive (– where the model has no sinks report).`, '');
  const head = ['run', 'cases', 'full', 'naive vs full', 'legolink:16 / full', 'won back', 'chunk-start sink'];
  lines.push(mdTable(head, runs.map(({ r }) => findingsRow(r, F1, sinkOf(r.model)))), '');
  const qa = runs.filter(({ r }) => hasRecall(r));
  if (qa.length) {
    lines.push('The same runs scored by *answer recall* (QA sets only): whether the reply holds the answer at all, however many other words come with it.', '');
    lines.push(mdTable(head, qa.map(({ r }) => findingsRow(r, RECALL, sinkOf(r.model)))), '');
  }
  const real = runs.filter(({ r }) => !isToy(r.model));
  for (const { r } of real) lines.push(realModelNote(r, sinkOf(r.model)), '');
  if (real.length) lines.push(whatWouldShowIt(real.map(({ r }) => r)), '');
  return lines.join('\n');
}

/** naive's verdict and legolink:16's against full under one scoring, in words. */
function gapSentences(r: EvalResults, m: Scoring): string[] {
  const naive = pairedGap(r.cases, 'naive', 'full', m.value)!;
  const lego = pairedGap(r.cases, 'legolink:16', 'full', m.value);
  const v = gapVerdict(naive);
  const by = m === F1 ? '' : ` by ${m.name}`;
  const lose = m === F1 ? ' accuracy' : by;
  const out = [v === 'loses'
    ? `Naive loses${lose}: ${gapText(naive)}.`
    : `Naive does not measurably lose${lose}: ${gapText(naive)}; the interval includes no difference, so ${naive.n} cases cannot tell it apart from full.`];
  if (lego) {
    const back = wonBack(r, m);
    out.push(lego.ratio >= WITHIN
      ? `legolink:16 stays within 5% of full${by}: ${gapText(lego)}${v === 'loses' ? '' : '; but naive did not lose either, so there was nothing to win back and this run says nothing about LegoLink'}.`
      : `legolink:16 does not stay within 5% of full${by}: ${gapText(lego)}${gapVerdict(lego) === 'loses' ? '' : ', although its interval also includes no difference'}${back === null ? '' : `; it wins back ${pct(back)} of naive's loss`}.`);
  }
  return out;
}

/** One paragraph per real (pretrained) model run: the three answers in words, with the figures they rest on. */
function realModelNote(r: EvalResults, sinks: SinkReport | undefined): string {
  const naive = pairedGap(r.cases, 'naive', 'full')!;
  const prompt = pairedGap(r.cases, 'prompt', 'full');
  const out: string[] = [`**${r.model} on ${r.data.replace(/^.*\//, '')}** (${naive.n} cases${r.complete ? '' : `, the finished ones of a partial run of ${r.cases_planned ?? '?'}`}).`];
  out.push(...gapSentences(r, F1));
  if (prompt) out.push(`The ordinary prompt scores ${f3(prompt.algorithm)} on the same cases.`);
  const recall = hasRecall(r) ? fullMean(r, RECALL) : null;
  if (answersInSentences(r)) {
    const p = pairedGap(r.cases, 'prompt', 'full', RECALL.value);
    out.push(`Full's F1 (${f3(fullMean(r, F1))}) is low because the model answers in whole sentences: by answer recall full finds ${f3(recall!)} of the answers${p ? ` and the ordinary prompt ${f3(p.algorithm)}` : ''}, so this model answers these questions well.`, ...gapSentences(r, RECALL));
  } else if (fullMean(r, F1) < 0.5) {
    out.push(`Full recompute itself answers few questions right (F1 ${f3(fullMean(r, F1))}${recall === null ? '' : `, answer recall ${f3(recall)}`}), so each case moves a mean by up to ${f3(1 / naive.n)} and the agreement columns (how closely each algorithm reproduces full's own answer) say more than the accuracy column.`);
  }
  const sweep = kSweep(r, answersInSentences(r) ? RECALL : F1);
  if (sweep) out.push(sweep);
  const ratio = sinks ? laterStartRatio(sinks, 'naive') : null;
  out.push(ratio === null
    ? 'There is no sinks report for this model yet.'
    : `In its sinks report (${sinks!.cases} cases of ${(sinks!.data ?? '').replace(/^.*\//, '')}), a chunk start under naive draws ${ratio.toFixed(1)}× an ordinary token: ${ratio >= SINK_RATIO ? 'the sinks are at chunk starts' : `under ${SINK_RATIO}×, not the sinks EPIC's Fig. 4 shows`}.`);
  return out.join(' ');
}

/** A run whose F1 says the model answers little while answer recall says it finds most answers: it names them inside sentences. */
const answersInSentences = (r: EvalResults) => hasRecall(r) && fullMean(r, F1) < 0.5 && fullMean(r, RECALL) >= 0.5;

/** The mean share of the prompt that `algorithm` recomputed over a run's cases. */
const recomputedShare = (r: EvalResults, algorithm: string) => mean(r.cases.filter((c) => c.algorithm === algorithm).map((c) => c.recompute_fraction));

/** A run's LegoLink algorithms at their k, in order of k. */
function legolinks(r: EvalResults): { a: string; k: number }[] {
  return r.algorithms.flatMap((a) => {
    const k = /^legolink:(\d+)$/.exec(a);
    return k ? [{ a, k: Number(k[1]) }] : [];
  }).sort((x, y) => x.k - y.k);
}

/**
 * Where a run sweeps k and naive lost: whether recomputing more of each chunk's start kept winning accuracy back.
 * When the largest k wins back no more than the one before it (within 5 points), the loss left is not at chunk
 * starts, which is what LegoLink recomputes.
 */
function sweepFinding(r: EvalResults, m: Scoring, name: string): string | null {
  const ks = legolinks(r);
  const back = ks.map(({ a }) => wonBack(r, m, a));
  if (ks.length < 3 || back.some((x) => x === null)) return null;
  const share = ks.map(({ a }) => recomputedShare(r, a));
  const [prev, last] = back.slice(-2) as number[];
  const figures = `k = ${ks.map((x) => x.k).join(', ')} win back ${back.map((x) => pct(x!)).join(', ')} of naive's loss by ${m.name} while recomputing ${share.map(pct).join(', ')} of the prompt`;
  return last <= prev + 0.05
    ? `On ${name}, recomputing more of each chunk's start stops paying: ${figures}. The loss left there is not at the chunk starts LegoLink recomputes but in the chunks' other rows.`
    : `On ${name}, ${figures}.`;
}

/** Where a run has LegoLink at several k: each k's score, the prompt share it recomputes and what it wins back. */
function kSweep(r: EvalResults, m: Scoring): string | null {
  const ks = legolinks(r);
  if (ks.length < 2) return null;
  const parts = ks.map(({ a }) => {
    const g = pairedGap(r.cases, a, 'full', m.value);
    const share = recomputedShare(r, a);
    const back = wonBack(r, m, a);
    return g ? `${a} ${f3(g.algorithm)} (${pct(share)} of the prompt recomputed${back === null ? '' : `, ${pct(back)} of naive's loss won back`})` : `${a} not scored`;
  });
  return `LegoLink by k (the first k tokens of every chunk recomputed), scored by ${m.name} against full's ${f3(fullMean(r, m))}: ${parts.join('; ')}.`;
}

/** full's mean over a run's cases under one scoring (NaN if none is scored so). */
function fullMean(r: EvalResults, m: Scoring): number {
  const xs = r.cases.filter((c) => c.algorithm === 'full').map(m.value).filter((x): x is number => x !== null);
  return xs.length ? mean(xs) : NaN;
}

/** Which runs show naive losing, legolink:16 within 5%, and both, under one scoring. */
function pattern(runs: EvalResults[], m: Scoring) {
  const loses = runs.filter((r) => gapVerdict(pairedGap(r.cases, 'naive', 'full', m.value)!) === 'loses');
  const within = runs.filter((r) => (pairedGap(r.cases, 'legolink:16', 'full', m.value)?.ratio ?? 0) >= WITHIN);
  // Within 5% means something only where naive lost: elsewhere there was nothing to win back.
  return { loses, within, recovers: loses.filter((r) => within.includes(r)) };
}

/** Why the gap is (or is not) clear on the models measured here, and what would show it: from the runs' own sizes. */
function whatWouldShowIt(runs: EvalResults[]): string {
  const tokens = runs.flatMap((r) => r.cases.filter((c) => c.algorithm === 'full').map((c) => c.prompt_tokens));
  const name = (r: EvalResults) => `${r.model} on ${r.data.replace(/^.*\//, '')}`;
  const all = (xs: EvalResults[]) => (xs.length === runs.length ? 'every real-model run above' : xs.length ? xs.map(name).join(', ') : 'no real-model run above');
  const f = pattern(runs, F1);
  const noLoss = runs.filter((r) => !f.loses.includes(r));
  let head = `Naive's loss shows on ${all(f.loses)}; legolink:16 stays within 5% of full on ${all(f.within)}.`
    + (f.loses.length ? ` Where naive loses, legolink:16 wins it back to within 5% on ${f.recovers.length === f.loses.length ? 'every such run' : f.recovers.length ? f.recovers.map(name).join(', ') : 'none of them'}.` : '')
    + (noLoss.length && noLoss.length < runs.length ? ` On ${noLoss.map(name).join(', ')} naive does not lose, so that run cannot show LegoLink winning accuracy back.` : '');
  // Answer recall, on the runs whose model answers well by it (full finds at least half the answers).
  const well = runs.filter(answersInSentences);
  if (well.length) {
    const w = pattern(well, RECALL);
    const back = w.loses.flatMap((r) => {
      const x = wonBack(r, RECALL);
      return x === null ? [] : [`${pct(x)} of naive's loss on ${name(r)}`];
    });
    head += ` Where the model answers well by answer recall (${well.map(name).join(', ')}), naive loses on ${w.loses.length === well.length ? 'every one' : w.loses.length ? w.loses.map(name).join(', ') : 'none'}, and legolink:16 wins it back to within 5% on ${w.recovers.length && w.recovers.length === w.loses.length ? 'every such run' : w.recovers.length ? w.recovers.map(name).join(', ') : 'none of them'}${back.length ? ` (it wins back ${back.join(', ')})` : ''}.`;
    const sweeps = well.flatMap((r) => sweepFinding(r, RECALL, name(r)) ?? []);
    if (sweeps.length) head += ` ${sweeps.join(' ')}`;
    if (w.loses.length === well.length && w.recovers.length === well.length && f.loses.length === runs.length && f.recovers.length === runs.length) return `${head} That is the papers' pattern.`;
  } else if (f.loses.length === runs.length && f.within.length === runs.length) return `${head} That is the papers' pattern.`;
  // A resumed evaluation's time is the sum of its runs.
  const span = (x: { started_at: string; finished_at: string | null }) => (x.finished_at ? (Date.parse(x.finished_at) - Date.parse(x.started_at)) / 60000 : NaN);
  const minutes = runs.map((r) => [...(r.resumed ?? []), r].reduce((t, x) => t + span(x), 0)).filter(Number.isFinite);
  const n = runs.map((r) => pairedGap(r.cases, 'naive', 'full')!.n);
  const took = minutes.length ? `; the runs took ${range(minutes.map(Math.round))} minutes on ${range(runs.map((r) => r.cpus))} CPU cores` : '';
  const weak = well.length === 0 && runs.every((r) => fullMean(r, F1) < 0.5) ? ' and answer few of these questions even with full attention' : '';
  return `${head} Why the pattern is not clearer on the models within reach here: they are small (${[...new Set(runs.map((r) => r.model))].join(', ')}: a few hundred million parameters at most)${weak}, so a handful of cases moves every mean; the prompts are short (${range(tokens)} tokens), where the papers link thousands of tokens in many chunks; and the sets are small (${range(n)} cases${took}), which keeps the intervals wide. EPIC measures Mistral 7B Instruct, Llama 3.1 8B Instruct and Yi Coder 9B Chat; CacheBlend Mistral-7B, Yi-34B and Llama-70B. What would show it: a 1B-or-larger instruction model (Qwen2.5-1.5B-Instruct, Llama 3.2 1B Instruct, Gemma 3 1B IT: the Model section's catalogue) over thousands of tokens in many chunks and a few hundred cases, on a real GPU (issue 34).`;
}
