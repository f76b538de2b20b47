/** Model files on the local file system, for the CLI, benchmarks and tests. */
import { readdirSync, statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { ModelFormatError, type ByteSource, type ModelFiles } from '../engine';

/** A ByteSource reading ranges of a file with positioned reads (the file is opened per read). */
export async function nodeFileSource(path: string, name = basename(path)): Promise<ByteSource> {
  const { size } = await stat(path);
  return {
    name,
    size,
    async read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > size) {
        throw new ModelFormatError(`${name} is truncated: needed bytes ${offset}..${offset + length} of a ${size}-byte file`);
      }
      const out = new Uint8Array(length);
      const fh = await open(path, 'r');
      try {
        let done = 0;
        while (done < length) {
          const { bytesRead } = await fh.read(out, done, length - done, offset + done);
          if (bytesRead === 0) throw new ModelFormatError(`${name} ended early at byte ${offset + done}`);
          done += bytesRead;
        }
      } finally {
        await fh.close();
      }
      return out;
    },
  };
}

/** The files of a directory by relative name (nested names such as shards are allowed, `..` is not). */
export function nodeFolderFiles(dir: string): ModelFiles {
  return {
    names: () => readdirSync(dir).filter((f) => statSync(join(dir, f)).isFile()),
    async get(name) {
      const rel = normalize(name);
      if (isAbsolute(rel) || rel === '..' || rel.startsWith('..' + sep)) return undefined;
      const path = join(dir, rel);
      try {
        if (!(await stat(path)).isFile()) return undefined;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
      return nodeFileSource(path, name);
    },
  };
}

/**
 * The files one model file stands for, by name: itself plus its tokenizer (named, or llama2.c's tok*.bin beside
 * a .bin checkpoint).
 */
export function modelFilePaths(path: string, tokenizer?: string): Map<string, string> {
  const map = new Map<string, string>([[basename(path), path]]);
  if (tokenizer) map.set(basename(tokenizer), tokenizer);
  else if (path.endsWith('.bin')) {
    for (const f of readdirSync(dirname(path))) {
      if (f !== basename(path) && /^(tok.*|tokenizer)\.bin$/.test(f)) map.set(f, join(dirname(path), f));
    }
  }
  return map;
}

/** A folder, or one file (plus its tokenizer: named, or llama2.c's tok*.bin beside it), as a model. */
export function nodeModelFiles(path: string, tokenizer?: string): ModelFiles {
  if (statSync(path).isDirectory()) return nodeFolderFiles(path);
  const map = modelFilePaths(path, tokenizer);
  return {
    names: () => [...map.keys()],
    get: async (n) => (map.has(n) ? nodeFileSource(map.get(n)!, n) : undefined),
  };
}
