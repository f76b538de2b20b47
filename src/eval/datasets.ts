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
import { parseCommand } from '../cli/options';
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
  const d = DATASET_DEFAULTS;
  const count = (help: string, dflt: number) => ({ type: 'integer', default: dflt, min: 1, help } as const);
  const a = parseCommand({
    command: 'npm run datasets',
    summary: 'Writes needle.jsonl, multidoc.jsonl and samsum.jsonl (format: src/eval/dataset.ts); the same seed and tokenizer give the same bytes.',
    options: {
      out: { type: 'string', default: 'data', arg: 'folder', help: 'where to write the files' },
      seed: { type: 'integer', default: d.seed, help: 'the random seed' },
      tokenizer: { type: 'string', default: DEFAULT_TOKENIZER, arg: 'file|model', help: 'measures chunk lengths' },
      'chunk-tokens': count('tokens per chunk', d.chunkTokens),
      'needle-lengths': { type: 'numbers', default: d.needleLengths, min: 1, help: 'needle context lengths in tokens' },
      'needle-depths': { type: 'numbers', default: d.needleDepths, min: 0, max: 1, help: 'where the needle sits, 0 (start) to 1 (end)' },
      'multidoc-n': count('multi-document cases', d.multidocN),
      'multidoc-docs': count('documents per multi-document case', d.multidocDocs),
      'samsum-n': count('summarisation cases', d.samsumN),
      'samsum-shots': count('examples per summarisation case', d.samsumShots),
      only: { type: 'list', default: d.only, arg: 'needle,multidoc,samsum', help: 'which datasets to write' },
      prefix: { type: 'string', default: '', help: 'a prefix for the file names' },
    },
  });
  const o: DatasetOptions = {
    seed: a.seed, chunkTokens: a['chunk-tokens'], needleLengths: a['needle-lengths'], needleDepths: a['needle-depths'],
    multidocN: a['multidoc-n'], multidocDocs: a['multidoc-docs'], samsumN: a['samsum-n'], samsumShots: a['samsum-shots'], only: a.only,
  };
  const unknown = o.only.filter((x) => !d.only.includes(x));
  if (unknown.length) {
    console.error(`npm run datasets: --only ${unknown.join(',')}: expected some of ${d.only.join(', ')}`);
    process.exit(2);
  }
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
