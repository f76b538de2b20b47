/**
 * npm run datasets -- --out data/ --seed 1 [--tokenizer <file|model>] [--needle-lengths 1024,…]
 *     [--needle-depths 0,0.25,…] [--chunk-tokens 512] [--multidoc-n 40] [--multidoc-docs 6]
 *     [--samsum-n 20] [--samsum-shots 10] [--only needle,multidoc,samsum]
 *
 * Writes needle.jsonl, multidoc.jsonl and samsum.jsonl (format: dataset.ts).
 * Chunk lengths are measured with the given tokenizer (stories260K's by
 * default); the same seed and tokenizer give the same bytes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { toJsonl, type EvalCase } from './dataset';
import { DEFAULT_TOKENIZER, loadTokenizerOnly } from './tokenizer';
import { generateNeedle } from './generators/needle';
import { generateMultiDoc } from './generators/multidoc';
import { generateSamsum } from './generators/samsum';
import type { Tokenizer } from '../engine';

export interface DatasetOptions {
  seed: number;
  chunkTokens: number;
  needleLengths: number[];
  needleDepths: number[];
  multidocN: number;
  multidocDocs: number;
  samsumN: number;
  samsumShots: number;
  only: string[];
}

export const DATASET_DEFAULTS: DatasetOptions = {
  seed: 1, chunkTokens: 512, needleLengths: [1024, 2048, 4096, 8192, 16384], needleDepths: [0, 0.25, 0.5, 0.75, 1],
  multidocN: 40, multidocDocs: 6, samsumN: 20, samsumShots: 10, only: ['needle', 'multidoc', 'samsum'],
};

/** Every requested dataset, by file stem. */
export function generateAll(tok: Tokenizer, tokenizerName: string, o: DatasetOptions): Record<string, EvalCase[]> {
  const count = (t: string) => tok.encode(t, { addBos: false }).length;
  const out: Record<string, EvalCase[]> = {};
  if (o.only.includes('needle')) {
    out.needle = generateNeedle({ seed: o.seed, lengths: o.needleLengths, depths: o.needleDepths, chunkTokens: o.chunkTokens, count, tokenizerName });
  }
  if (o.only.includes('multidoc')) out.multidoc = generateMultiDoc({ seed: o.seed, n: o.multidocN, docs: o.multidocDocs });
  if (o.only.includes('samsum')) {
    out.samsum = generateSamsum({ seed: o.seed, n: o.samsumN, shots: o.samsumShots, chunkTokens: o.chunkTokens, count, tokenizerName });
  }
  return out;
}

async function main() {
  const { values: a } = parseArgs({
    options: {
      out: { type: 'string', default: 'data' }, seed: { type: 'string', default: '1' }, tokenizer: { type: 'string', default: DEFAULT_TOKENIZER },
      'chunk-tokens': { type: 'string' }, 'needle-lengths': { type: 'string' }, 'needle-depths': { type: 'string' },
      'multidoc-n': { type: 'string' }, 'multidoc-docs': { type: 'string' }, 'samsum-n': { type: 'string' }, 'samsum-shots': { type: 'string' },
      only: { type: 'string' }, prefix: { type: 'string', default: '' },
    },
  });
  const d = DATASET_DEFAULTS;
  const nums = (s: string | undefined, dflt: number[]) => (s ? s.split(',').map(Number) : dflt);
  const o: DatasetOptions = {
    seed: Number(a.seed), chunkTokens: Number(a['chunk-tokens'] ?? d.chunkTokens),
    needleLengths: nums(a['needle-lengths'], d.needleLengths), needleDepths: nums(a['needle-depths'], d.needleDepths),
    multidocN: Number(a['multidoc-n'] ?? d.multidocN), multidocDocs: Number(a['multidoc-docs'] ?? d.multidocDocs),
    samsumN: Number(a['samsum-n'] ?? d.samsumN), samsumShots: Number(a['samsum-shots'] ?? d.samsumShots),
    only: a.only ? a.only.split(',') : d.only,
  };
  if (!Number.isInteger(o.seed)) throw new Error('--seed must be an integer');
  if (o.needleDepths.some((x) => !(x >= 0 && x <= 1))) throw new Error('--needle-depths must be in [0, 1]');
  const { tokenizer, name } = await loadTokenizerOnly(a.tokenizer!);
  mkdirSync(a.out!, { recursive: true });
  for (const [stem, cases] of Object.entries(generateAll(tokenizer, name, o))) {
    const path = join(a.out!, `${a.prefix}${stem}.jsonl`);
    const text = toJsonl(cases);
    writeFileSync(path, text);
    console.log(`${path}: ${cases.length} cases, ${(text.length / 1024).toFixed(0)} KiB (tokenizer ${name}, seed ${o.seed})`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
