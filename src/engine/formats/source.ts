/**
 * Random-access bytes of a model file, wherever it lives: a dropped File, an
 * OPFS file, a fetched buffer, or a path in Node. Loaders read only the
 * ranges they need, so multi-hundred-megabyte files never have to be copied
 * whole into one ArrayBuffer.
 */
export interface ByteSource {
  readonly name: string;
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

export class ModelFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelFormatError';
  }
}

export function bufferSource(name: string, bytes: Uint8Array): ByteSource {
  return {
    name,
    size: bytes.byteLength,
    async read(offset, length) {
      if (offset < 0 || offset + length > bytes.byteLength) {
        throw new ModelFormatError(
          `${name} is truncated: needed bytes ${offset}..${offset + length} of a ${bytes.byteLength}-byte file`,
        );
      }
      return bytes.subarray(offset, offset + length);
    },
  };
}

export function blobSource(blob: Blob, name = (blob as File).name ?? 'blob'): ByteSource {
  return {
    name,
    size: blob.size,
    async read(offset, length) {
      if (offset < 0 || offset + length > blob.size) {
        throw new ModelFormatError(
          `${name} is truncated: needed bytes ${offset}..${offset + length} of a ${blob.size}-byte file`,
        );
      }
      return new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
    },
  };
}
