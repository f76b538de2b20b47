/**
 * Model files from the user's disk: a folder or files picked with an
 * `<input type=file>`, or dropped on the page (folders through
 * DataTransferItem.webkitGetAsEntry). Paths are made relative to the model's
 * folder; the File objects themselves go to the worker untouched.
 */
import type { LocalFile } from '../worker/protocol';

export interface LocalSelection {
  /** Folder name, or the main file's name. */
  name: string;
  files: LocalFile[];
}

/** Folders deeper than this, and hidden ones (.git, .cache), are not walked. */
const MAX_DEPTH = 3;
const MAX_FILES = 5000;

function nameOf(files: LocalFile[], folder?: string): string {
  if (folder) return folder;
  const main = [...files].sort((a, b) => b.file.size - a.file.size)[0];
  return main ? main.path.split('/').pop()!.replace(/\.(bin|gguf|safetensors)$/, '') : 'model';
}

/** From an input's FileList: a webkitdirectory pick has paths like `folder/config.json`. */
export function filesFromInput(list: FileList | null): LocalSelection {
  const all = Array.from(list ?? []);
  const rel = all.map((f) => f.webkitRelativePath || f.name);
  const top = rel.every((p) => p.includes('/')) ? rel[0]?.split('/')[0] : undefined;
  const files = all
    .map((file, i) => ({ file, path: top ? rel[i].slice(top.length + 1) : rel[i] }))
    .filter((f) => !f.path.split('/').some((seg) => seg.startsWith('.')));
  return { name: nameOf(files, top), files };
}

const fileOf = (e: FileSystemFileEntry) => new Promise<File>((res, rej) => e.file(res, rej));

async function readAll(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const out: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
    if (!batch.length) return out;
    out.push(...batch);
  }
}

async function walk(entry: FileSystemEntry, prefix: string, depth: number, out: LocalFile[]): Promise<void> {
  if (entry.name.startsWith('.') || out.length >= MAX_FILES) return;
  if (entry.isFile) {
    out.push({ path: prefix + entry.name, file: await fileOf(entry as FileSystemFileEntry) });
  } else if (entry.isDirectory && depth < MAX_DEPTH) {
    for (const child of await readAll(entry as FileSystemDirectoryEntry)) {
      await walk(child, `${prefix}${entry.name}/`, depth + 1, out);
    }
  }
}

/**
 * From a drop event. The items must be read before the handler returns, so
 * call this synchronously in onDrop; the folder walk itself is asynchronous.
 */
export function filesFromDrop(dt: DataTransfer): Promise<LocalSelection> {
  const entries: FileSystemEntry[] = [];
  const loose: File[] = [];
  for (const item of Array.from(dt.items ?? [])) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry?.();
    const file = entry ? null : item.getAsFile();
    if (entry) entries.push(entry);
    else if (file) loose.push(file);
  }
  if (!entries.length && !loose.length) loose.push(...Array.from(dt.files ?? []));
  return (async () => {
    const files: LocalFile[] = loose.map((file) => ({ path: file.name, file }));
    if (entries.length === 1 && entries[0].isDirectory) {
      // One folder: paths relative to it.
      const dir = entries[0] as FileSystemDirectoryEntry;
      for (const child of await readAll(dir)) await walk(child, '', 1, files);
      return { name: dir.name, files };
    }
    for (const e of entries) await walk(e, '', 0, files);
    return { name: nameOf(files), files };
  })();
}
