#!/usr/bin/env node
/**
 * `npm run gpu:collect -- <dir> docs/results/gpu-<name>.json ["<command run>"]`: folds what a
 * GPU-kit run wrote into its output folder (gpu-check.json, torch.json) into
 * one results file for docs/results/, which `npm run results` turns into the
 * "On a real GPU" section of docs/RESULTS.md.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, out, command = 'bash scripts/gpu-check.sh --budget-s 330'] = process.argv.slice(2);
if (!dir || !out) {
  console.error('usage: npm run gpu:collect -- <the run\'s output folder> docs/results/gpu-<name>.json');
  process.exit(2);
}
const read = (f) => (existsSync(join(dir, f)) ? JSON.parse(readFileSync(join(dir, f), 'utf8')) : null);
const kit = read('gpu-check.json');
if (!kit) {
  console.error(`gpu:collect: ${dir} holds no gpu-check.json`);
  process.exit(1);
}
if (kit.parity) delete kit.parity.tail; // the log's tail is for reading on the day, not for the record
writeFileSync(out, JSON.stringify({ command, kit, torch: read('torch.json') }, null, 1) + '\n');
console.log(`gpu:collect: wrote ${out}`);
