/**
 * Command-line options for every `npm run` command: one declaration per command gives the parser, the checks on
 * each value, and `--help` (its options with their defaults, then the linking algorithms' catalogue). A wrong
 * option or value ends the command with one line on stderr and exit status 2, never a stack trace.
 *
 *   const a = parseCommand({ command: 'npm run eval', summary: '…', options: {
 *     data: { type: 'string', required: true, arg: 'file.jsonl', help: 'the cases' },
 *     'max-new-tokens': { type: 'integer', default: 32, min: 1, help: 'answer length' } } });
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ALGORITHM_CATALOGUE, formatAlgorithm, parseAlgorithm, specSyntax } from '../kvlink/catalogue';

export interface OptionSpec {
  /** string; a number or an integer (with min/max); a flag; a comma list of strings, of numbers, or of algorithm specs. */
  type: 'string' | 'number' | 'integer' | 'boolean' | 'list' | 'numbers' | 'algorithms';
  help: string;
  default?: string | number | boolean | readonly string[] | readonly number[];
  /** The values a string may take. */
  choices?: readonly string[];
  /** Bounds of a number, or of every number of a list. */
  min?: number;
  max?: number;
  required?: boolean;
  /** How --help names the value: `--model <path>`. */
  arg?: string;
  /** A further check of a string value: what is wrong with it, or undefined when it is fine. */
  check?: (value: string) => string | undefined;
}

export interface CommandSpec {
  /** How it is run: `npm run eval`. */
  command: string;
  summary: string;
  options: Record<string, OptionSpec>;
}

type ValueOf<O extends OptionSpec> = O['type'] extends 'boolean' ? boolean
  : O['type'] extends 'number' | 'integer' ? number
  : O['type'] extends 'numbers' ? number[]
  : O['type'] extends 'list' | 'algorithms' ? string[]
  : string;

/** The parsed values: an option with a default, a flag or a required option is always there. */
export type OptionValues<S extends Record<string, OptionSpec>> = {
  [K in keyof S]: S[K] extends { default: unknown } | { type: 'boolean' } | { required: true } ? ValueOf<S[K]> : ValueOf<S[K]> | undefined;
};

/** A wrong command line: its message is the one line the user sees. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Parses `argv` against `spec`. Returns the values, or 'help' when --help (-h) was asked; throws UsageError on an
 * unknown option, a missing or bad value.
 */
export function parseOptions<const S extends CommandSpec>(spec: S, argv: readonly string[]): OptionValues<S['options']> | 'help' {
  let raw: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(Object.entries(spec.options).map(([k, o]) => [k, { type: o.type === 'boolean' ? 'boolean' as const : 'string' as const }]));
    raw = parseArgs({ args: [...argv], options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError(argsMessage(e));
  }
  if (raw.help) return 'help';
  const out: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(spec.options)) {
    const given = raw[name];
    if (given === undefined) {
      if (o.required) throw new UsageError(`--${name} is required`);
      out[name] = o.type === 'boolean' ? Boolean(o.default) : Array.isArray(o.default) ? [...o.default] : o.default;
      continue;
    }
    out[name] = typeof given === 'boolean' ? given : convert(name, o, given);
  }
  return out as OptionValues<S['options']>;
}

function convert(name: string, o: OptionSpec, text: string): unknown {
  const bad = (why: string) => new UsageError(`--${name} ${JSON.stringify(text)}: ${why}`);
  const number = (s: string) => {
    const v = s.trim() === '' ? NaN : Number(s);
    if (!Number.isFinite(v)) throw bad(`expected a number`);
    if (o.type === 'integer' && !Number.isInteger(v)) throw bad('expected a whole number');
    if ((o.min !== undefined && v < o.min) || (o.max !== undefined && v > o.max)) throw bad(`expected a number in [${o.min ?? '-∞'}, ${o.max ?? '∞'}]`);
    return v;
  };
  const items = () => {
    const list = text.split(',').map((s) => s.trim()).filter(Boolean);
    if (!list.length) throw bad('expected a comma-separated list');
    return list;
  };
  switch (o.type) {
    case 'number':
    case 'integer':
      return number(text);
    case 'numbers':
      return items().map(number);
    case 'list':
      return items();
    case 'algorithms':
      return items().map((s) => {
        try {
          return formatAlgorithm(parseAlgorithm(s));
        } catch (e) {
          throw bad(e instanceof Error ? e.message : String(e));
        }
      });
    default:
      if (o.choices && !o.choices.includes(text)) throw bad(`expected one of ${o.choices.join(', ')}`);
      if (o.check) {
        const wrong = o.check(text);
        if (wrong) throw bad(wrong);
      }
      return text;
  }
}

/** node:util's parseArgs errors, in one line without its advice on positionals. */
function argsMessage(e: unknown): string {
  const err = e as { code?: string; message?: string };
  const name = /'(-[^']*)'/.exec(err.message ?? '')?.[1];
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${name ?? ''}`.trim();
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(err.message ?? '')?.[1] ?? ''} (options take the form --name value)`.trim();
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const option = /'(--?[\w-]+)/.exec(err.message ?? '')?.[1] ?? 'an option';
      return /does not take/.test(err.message ?? '') ? `${option} takes no value` : `${option} needs a value`;
    }
    default:
      return err.message?.split('\n')[0] ?? String(e);
  }
}

/** The text --help prints: usage, summary, options with defaults, and the linking algorithms. */
export function helpText(spec: CommandSpec): string {
  const rows = Object.entries(spec.options).map(([name, o]) => {
    const arg = o.type === 'boolean' ? '' : ` <${o.arg ?? (o.choices ? o.choices.join('|') : o.type === 'algorithms' ? 'spec,…' : o.type)}>`;
    const def = o.required ? ' (required)' : o.default === undefined || o.default === false ? '' : ` (default: ${Array.isArray(o.default) ? o.default.join(',') : o.default})`;
    return [`--${name}${arg}`, `${o.help}${def}`];
  });
  rows.push(['-h, --help', 'print this help']);
  const lines = [`usage: ${spec.command} -- [options]`, '', spec.summary, '', 'Options:', ...columns(rows), '', algorithmsHelp()];
  return lines.join('\n');
}

/** Two columns; a first column wider than 28 characters puts its text on the next line. */
function columns(rows: string[][]): string[] {
  const w = Math.min(28, Math.max(...rows.map((r) => r[0].length)));
  return rows.flatMap(([a, b]) => (a.length > w ? [`  ${a}`, `  ${''.padEnd(w)}  ${b}`] : [`  ${a.padEnd(w)}  ${b}`]));
}

/** The catalogue of linking algorithms as --help lists it. */
export function algorithmsHelp(): string {
  const lines = ['Linking algorithms (a spec is the name, or name:parameter as in legolink:16):'];
  for (const a of ALGORITHM_CATALOGUE) {
    const from = a.paper ? `${a.paper.title}, ${a.paper.where}` : 'the ordinary prompt';
    const param = a.param ? `${a.param.name} in [${a.param.min}, ${a.param.max}], default ${a.param.default}` : 'no parameter';
    lines.push(
      `  ${specSyntax(a).padEnd(13)} ${a.label}, ${a.role === 'reference' ? 'a reference' : 'linking'} (from ${from})`,
      `  ${''.padEnd(13)} recomputes ${a.recomputes}`,
      `  ${''.padEnd(13)} ${param}; links ${a.variant} chunks${a.extraSpecs ? `; also ${a.extraSpecs}` : ''}`,
    );
  }
  return lines.join('\n');
}

/**
 * Parses the process's own arguments: prints the help and exits 0 on --help, prints one line and exits 2 on a
 * wrong command line.
 */
export function parseCommand<const S extends CommandSpec>(spec: S, argv: readonly string[] = process.argv.slice(2)): OptionValues<S['options']> {
  let v: OptionValues<S['options']> | 'help';
  try {
    v = parseOptions(spec, argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${spec.command}: ${e.message} (${spec.command} -- --help lists the options)`);
    process.exit(2);
  }
  if (v === 'help') {
    console.log(helpText(spec));
    process.exit(0);
  }
  return v;
}

/** A check for options that name an existing file or folder. */
export const existing = (path: string) => (existsSync(path) ? undefined : 'no such file or folder');
