/** Model files on the local file system, for the CLI, benchmarks and tests. */
import { closeSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ModelFormatError, type ByteSource } from '../engine/formats/source';
import type { ModelFiles } from '../engine/formats/load';

export function fileSource(path: string): ByteSource {
  const size = statSync(path).size;
  return {
    name: basename(path),
    size,
    async read(offset, length) {
      if (offset < 0 || offset + length > size) {
        throw new ModelFormatError(`${basename(path)} is truncated: needed bytes ${offset}..${offset + length} of a ${size}-byte file`);
      }
      const out = new Uint8Array(length);
      const fd = openSync(path, 'r');
      try {
        let done = 0;
        while (done < length) {
          const n = readSync(fd, out, done, length - done, offset + done);
          if (n <= 0) throw new ModelFormatError(`${basename(path)}: unexpected end of file`);
          done += n;
        }
      } finally {
        closeSync(fd);
      }
      return out;
    },
  };
}

/** A folder's files, or one file (plus an explicitly named tokenizer) as a model. */
export function nodeModelFiles(path: string, tokenizer?: string): ModelFiles {
  const isDir = statSync(path).isDirectory();
  const map = new Map<string, string>();
  if (isDir) {
    for (const f of readdirSync(path)) if (statSync(join(path, f)).isFile()) map.set(f, join(path, f));
  } else {
    map.set(basename(path), path);
    if (tokenizer) map.set(basename(tokenizer), tokenizer);
    else if (path.endsWith('.bin')) {
      // llama2.c keeps its tokenizer next to the model: tok*.bin or tokenizer.bin.
      for (const f of readdirSync(dirname(path))) {
        if (f !== basename(path) && /^(tok.*|tokenizer)\.bin$/.test(f)) map.set(f, join(dirname(path), f));
      }
    }
  }
  return {
    names: () => [...map.keys()],
    get: async (n) => (map.has(n) ? fileSource(map.get(n)!) : undefined),
  };
}
