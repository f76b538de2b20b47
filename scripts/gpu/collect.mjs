#!/usr/bin/env node
/**
 * `npm run gpu:collect -- <dir>[,<dir>...] docs/results/gpu-<name>.json ["<command run>"]`: folds what a
 * GPU-kit run wrote into its output folder (gpu-check.json, torch.json) into
 * one results file for docs/results/, which `npm run results` turns into the
 * "On a real GPU" section of docs/RESULTS.md. Folders after the first are later
 * calls on the same machine (the real model's, after the parts were carried):
 * what they measured that the first did not (its `real` stage) is added.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, out, command = 'bash scripts/gpu-check.sh --budget-s 330'] = process.argv.slice(2);
if (!dir || !out) {
  console.error('usage: npm run gpu:collect -- <the run\'s output folder> docs/results/gpu-<name>.json');
  process.exit(2);
}
const [first, ...later] = dir.split(',');
const read = (d, f) => (existsSync(join(d, f)) ? JSON.parse(readFileSync(join(d, f), 'utf8')) : null);
const kit = read(first, 'gpu-check.json');
for (const d of [first, ...later]) {
  const k = read(d, 'gpu-check.json');
  if (!k) {
    console.error(`gpu:collect: ${d} holds no gpu-check.json`);
    process.exit(1);
  }
  for (const key of Object.keys(k)) kit[key] ??= k[key];
}
if (kit.parity) delete kit.parity.tail; // the log's tail is for reading on the day, not for the record
writeFileSync(out, JSON.stringify({ command, kit, torch: read(first, 'torch.json') }, null, 1) + '\n');
console.log(`gpu:collect: wrote ${out}`);
