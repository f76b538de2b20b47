/**
 * Rewrites a GGUF file with every tensor dequantized to F32 (our
 * dequantizers, which equal gguf-py's bit for bit: tests/engine/gguf.test.ts).
 * The header up to the tensor infos (version, counts, metadata) is copied byte
 * for byte; the tensor infos get type F32 and new offsets at the same
 * alignment. llama.cpp runs such a file without quantizing its activations, so
 * it isolates the forward pass from quantized arithmetic.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { parseGguf } from '../../src/engine/formats/gguf';
import { dequantizeF32 } from '../../src/engine/formats/gguf-quants';
import { nodeFileSource } from '../../src/node/files';

export async function writeF32Gguf(src: string, dst: string): Promise<void> {
  const g = await parseGguf(await nodeFileSource(src));
  const enc = new TextEncoder();
  const names = g.tensors.map((t) => enc.encode(t.name));
  // The tensor infos are the header's last section: name (u64 length + bytes), n_dims (u32), dims (u64 each), type (u32), offset (u64).
  const infoBytes = g.tensors.reduce((s, t, i) => s + 8 + names[i]!.length + 4 + 8 * t.dims.length + 4 + 8, 0);
  const kvEnd = g.headerBytes - infoBytes;
  const align = (n: number) => Math.ceil(n / g.alignment) * g.alignment;

  const fin = openSync(src, 'r');
  const fout = openSync(dst, 'w');
  try {
    const head = new Uint8Array(kvEnd);
    readSync(fin, head, 0, kvEnd, 0);
    writeSync(fout, head);

    const infos = new Uint8Array(infoBytes);
    const view = new DataView(infos.buffer);
    let p = 0;
    let rel = 0;
    const offsets: number[] = [];
    g.tensors.forEach((t, i) => {
      view.setBigUint64(p, BigInt(names[i]!.length), true);
      infos.set(names[i]!, p + 8);
      p += 8 + names[i]!.length;
      view.setUint32(p, t.dims.length, true);
      p += 4;
      for (const d of t.dims) {
        view.setBigUint64(p, BigInt(d), true);
        p += 8;
      }
      view.setUint32(p, 0 /* F32 */, true);
      view.setBigUint64(p + 4, BigInt(rel), true);
      p += 12;
      offsets.push(rel);
      rel = align(rel + 4 * t.nElements);
    });
    writeSync(fout, infos);
    const dataOffset = align(g.headerBytes);
    writeSync(fout, new Uint8Array(dataOffset - g.headerBytes));

    let pos = 0;
    g.tensors.forEach((t, i) => {
      if (offsets[i]! > pos) writeSync(fout, new Uint8Array(offsets[i]! - pos));
      const raw = new Uint8Array(t.nBytes);
      readSync(fin, raw, 0, t.nBytes, t.offset);
      const f32 = dequantizeF32(t.type, raw, t.nElements, t.name);
      writeSync(fout, new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength));
      pos = offsets[i]! + f32.byteLength;
    });
  } finally {
    closeSync(fin);
    closeSync(fout);
  }
}
