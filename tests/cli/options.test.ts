/**
 * The shared command-line helper (src/cli/options.ts), and every npm command that uses it: --help lists the options
 * with their defaults and the algorithm catalogue; a wrong option ends the command with one line and exit status 2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpText, parseOptions, UsageError } from '../../src/cli/options';
import { ALGORITHM_CATALOGUE } from '../../src/kvlink/catalogue';

const ROOT = join(import.meta.dirname, '../..');

const spec = {
  command: 'npm run demo',
  summary: 'A command for the test.',
  options: {
    data: { type: 'string', required: true, help: 'the data' },
    n: { type: 'integer', default: 3, min: 1, max: 10, help: 'how many' },
    ratio: { type: 'number', help: 'a ratio' },
    mode: { type: 'string', default: 'a', choices: ['a', 'b'], help: 'the mode' },
    lengths: { type: 'numbers', default: [1, 2], min: 0, help: 'lengths' },
    algorithms: { type: 'algorithms', default: ['naive'], help: 'algorithms' },
    fast: { type: 'boolean', help: 'go fast' },
  },
} as const;

const usage = (argv: string[]) => {
  try {
    parseOptions(spec, argv);
  } catch (e) {
    assert.ok(e instanceof UsageError, `a UsageError, not ${e}`);
    return e.message;
  }
  assert.fail(`${argv.join(' ')} was accepted`);
};

test('values are converted and checked, defaults filled in', () => {
  const v = parseOptions(spec, ['--data', 'x', '--ratio', '0.5', '--lengths', '4, 8', '--algorithms', 'LegoLink:8,cacheblend', '--fast']);
  assert.deepEqual(v, { data: 'x', n: 3, ratio: 0.5, mode: 'a', lengths: [4, 8], algorithms: ['legolink:8', 'cacheblend:0.15'], fast: true });
  assert.equal(parseOptions(spec, ['-h']), 'help');
  assert.equal(parseOptions(spec, ['--data', 'x', '--help']), 'help');
});

test('a wrong command line is one clear message', () => {
  assert.equal(usage(['--data', 'x', '--bogus']), 'unknown option --bogus');
  assert.equal(usage([]), '--data is required');
  assert.equal(usage(['--data', 'x', '--n', '11']), '--n "11": expected a number in [1, 10]');
  assert.equal(usage(['--data', 'x', '--n', '2.5']), '--n "2.5": expected a whole number');
  assert.equal(usage(['--data', 'x', '--ratio', 'half']), '--ratio "half": expected a number');
  assert.equal(usage(['--data', 'x', '--mode', 'c']), '--mode "c": expected one of a, b');
  assert.equal(usage(['--data', 'x', '--lengths', '1,-2']), '--lengths "1,-2": expected a number in [0, ∞]');
  assert.match(usage(['--data', 'x', '--algorithms', 'naive,legolink:9999']), /^--algorithms "naive,legolink:9999": Bad parameter in "legolink:9999": k must be in \[0, 4096\]$/);
  assert.match(usage(['--data', 'x', '--algorithms', 'magic']), /Unknown linking algorithm "magic"/);
  assert.equal(usage(['--data']), '--data needs a value');
  assert.equal(usage(['--data', 'x', '--fast=yes']), '--fast takes no value');
  assert.match(usage(['--data', 'x', 'extra']), /^unexpected argument extra/);
  for (const argv of [['--bogus'], ['--data', 'x', '--n', 'many']]) assert.ok(!usage(argv).includes('\n'), 'one line');
});

test('--help lists every option with its default, and the algorithm catalogue', () => {
  const text = helpText(spec);
  assert.match(text, /^usage: npm run demo -- \[options\]/);
  assert.match(text, /--n <integer> +how many \(default: 3\)/);
  assert.match(text, /--data <string> +the data \(required\)/);
  assert.match(text, /--mode <a\|b> +the mode \(default: a\)/);
  assert.match(text, /--lengths <numbers> +lengths \(default: 1,2\)/);
  for (const a of ALGORITHM_CATALOGUE) {
    assert.ok(text.includes(`  ${a.param ? `${a.kind}:${a.param.name}` : a.kind} `), `${a.kind} is listed`);
    if (a.param) assert.ok(text.includes(`${a.param.name} in [${a.param.min}, ${a.param.max}], default ${a.param.default}`), `${a.kind}'s range`);
    if (a.paper) assert.ok(text.includes(a.paper.title), `${a.kind}'s paper`);
  }
});

/** The npm commands that take options, with the file each runs (from package.json). */
function commands(): [string, string][] {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const names = Object.keys(scripts).filter((n) => ['generate', 'eval', 'sinks', 'datasets', 'results'].includes(n) || n.startsWith('bench:'));
  return names.map((n) => [n, /(src\/\S+\.ts)\b/.exec(scripts[n])![1]]);
}

function run(file: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

test('every command answers --help, and refuses an unknown option with one line and exit status 2', async () => {
  const list = commands();
  assert.equal(list.length, 12, list.map((c) => c[0]).join(', '));
  for (const [name, file] of list) {
    const help = await run(file, ['--help']);
    assert.equal(help.status, 0, `${name} --help: ${help.stderr}`);
    assert.match(help.stdout, new RegExp(`^usage: npm run ${name} -- \\[options\\]`), name);
    assert.match(help.stdout, /Linking algorithms/, `${name} lists the algorithms`);
    const bad = await run(file, ['--no-such-option']);
    assert.equal(bad.status, 2, `${name}: ${bad.stderr}`);
    assert.equal(bad.stderr, `npm run ${name}: unknown option --no-such-option (npm run ${name} -- --help lists the options)\n`);
    assert.equal(bad.stdout, '');
  }
});
