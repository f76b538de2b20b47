/**
 * Prompt Cache (MLSys '24, §3): a schema of prompt modules, each encoded on
 * its own at fixed position ids, so a prompt built from the schema reuses
 * the modules' caches without moving them.
 *
 * Schema format (JSON):
 *
 *   { "name": "travel",
 *     "modules": [
 *       { "name": "intro", "text": "You plan trips." },
 *       { "union": [ { "name": "paris", "text": "Paris facts ..." },
 *                    { "name": "rome", "text": "Rome facts ..." } ] },
 *       { "name": "ask", "text": "Plan {{days:2}} days for {{who:6}}." } ] }
 *
 * Modules follow one another in position space, starting at 1 (position 0
 * is the prompt's BOS). Members of a `union` share their start position and
 * the union spans its longest member. `{{name:len}}` is a parameter: it
 * reserves `len` positions inside its module, left out of the module's
 * cache; at link time the argument's tokens (at most `len`) are computed at
 * those positions. Text after the last module continues after the largest
 * position of the schema.
 */
import type { Tokenizer } from '../engine';
import { compileChunk, type CompileContext } from './compile';
import type { CompiledChunk, LinkPart } from '../types/kv';

export interface SchemaModule { name: string; text: string }
export interface Schema { name: string; modules: (SchemaModule | { union: SchemaModule[] })[] }

export interface EncodedModule {
  name: string;
  tokens: number[];
  positions: number[];
  params: { name: string; start: number; len: number }[];
}

const PARAM = /\{\{(\w+):(\d+)\}\}/g;

export function parseSchema(json: string | unknown): Schema {
  const s = (typeof json === 'string' ? JSON.parse(json) : json) as Schema;
  if (!s || !Array.isArray(s.modules) || s.modules.length === 0) throw new Error('A Prompt Cache schema needs a non-empty "modules" list');
  const names = new Set<string>();
  for (const m of s.modules.flatMap((m) => ('union' in m ? m.union : [m]))) {
    if (typeof m.name !== 'string' || typeof m.text !== 'string') throw new Error('Every module needs a "name" and a "text"');
    if (names.has(m.name)) throw new Error(`Module name "${m.name}" is used twice`);
    names.add(m.name);
  }
  return s;
}

/** Token ids and positions of every module (parameters excluded), by name. */
export function encodeSchema(schema: Schema, tok: Tokenizer): Map<string, EncodedModule> {
  const out = new Map<string, EncodedModule>();
  let pos = 1;
  const encodeModule = (m: SchemaModule, start: number) => {
    const e: EncodedModule = { name: m.name, tokens: [], positions: [], params: [] };
    let p = start;
    let last = 0;
    const addText = (text: string) => {
      if (!text) return;
      for (const t of tok.encode(text, { addBos: false })) {
        e.tokens.push(t);
        e.positions.push(p++);
      }
    };
    for (const match of m.text.matchAll(PARAM)) {
      addText(m.text.slice(last, match.index));
      e.params.push({ name: match[1], start: p, len: Number(match[2]) });
      p += Number(match[2]);
      last = match.index! + match[0].length;
    }
    addText(m.text.slice(last));
    out.set(m.name, e);
    return p - start;
  };
  for (const m of schema.modules) {
    const members = 'union' in m ? m.union : [m];
    pos += Math.max(...members.map((x) => encodeModule(x, pos)));
  }
  return out;
}

/** Compiles every module at its schema positions. */
export async function compileSchema(ctx: CompileContext, modules: Map<string, EncodedModule>): Promise<Map<string, CompiledChunk>> {
  const out = new Map<string, CompiledChunk>();
  for (const m of modules.values()) {
    if (m.tokens.length === 0) continue;
    out.set(m.name, await compileChunk(ctx, m.tokens, { kind: 'promptcache', positions: m.positions }));
  }
  return out;
}

/**
 * The link parts of a prompt built from the schema: the chosen modules (one
 * member per union, by name), their parameters' arguments at the reserved
 * positions, then `suffix` tokens.
 */
export function promptCacheParts(
  schema: Schema, modules: Map<string, EncodedModule>, compiled: Map<string, CompiledChunk>,
  choose: { modules: string[]; args: Record<string, number[]>; suffix: number[] },
): LinkPart[] {
  const parts: LinkPart[] = [];
  const params: LinkPart[] = [];
  for (const m of schema.modules) {
    const members = 'union' in m ? m.union : [m];
    const picked = members.filter((x) => choose.modules.includes(x.name));
    if (picked.length > 1) throw new Error(`Only one member of a union can be used: ${picked.map((x) => x.name).join(', ')}`);
    if (picked.length === 0) continue;
    const e = modules.get(picked[0].name)!;
    const c = compiled.get(e.name);
    if (c) parts.push({ kind: 'cache', chunk: c });
    for (const p of e.params) {
      const arg = choose.args[p.name] ?? [];
      if (arg.length > p.len) throw new Error(`Argument "${p.name}" has ${arg.length} tokens; the schema reserves ${p.len}`);
      if (arg.length) params.push({ kind: 'text', tokens: arg, positions: arg.map((_, i) => p.start + i) });
    }
  }
  return [...parts, ...params, { kind: 'text', tokens: choose.suffix }];
}
