/**
 * Atomic blob writes. A blob becomes visible only through its index record,
 * so the steps are:
 *
 *  1. write the bytes under a temporary name `tmp-<key>.<nonce>` (or, on a
 *     backend that cannot rename, straight under the final name);
 *  2. read them back and check them against what was written, byte for byte;
 *  3. rename to the final name `<key>.<nonce>.lkv` (unique per write, so it
 *     never replaces a live blob);
 *  4. (the store) write the index record naming that file: the commit point;
 *  5. (the store) delete the blob of the entry's previous version, if any.
 *
 * A crash before 4 leaves a file no record names; `open()` deletes every such
 * file (tmp- or not), so a half-written entry is never seen.
 */
import { crc32 } from './crc32';
import { sameBytes } from './blob';
import { CorruptBlobError, isQuotaError, type BlobBackend } from './types';

export const BLOB_SUFFIX = '.lkv';
export const TMP_PREFIX = 'tmp-';

let counter = 0;
function nonce(): string {
  const r = new Uint32Array(1);
  crypto.getRandomValues(r);
  return `${Date.now().toString(36)}${(counter++ % 1296).toString(36).padStart(2, '0')}${r[0].toString(36)}`;
}

/** A file-name-safe form of a cache id (cosmetic: uniqueness comes from the nonce). */
export function fileKey(id: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : `h${crc32(new TextEncoder().encode(id)).toString(16).padStart(8, '0')}`;
}

/**
 * Writes `bytes` (an encoded blob) through steps 1-3 and returns the final
 * name and what was read back. `onQuota` is called when the device is out of
 * space and returns whether it freed something (then the write is retried).
 */
export async function writeBlobAtomically(
  blobs: BlobBackend,
  id: string,
  bytes: Uint8Array,
  onQuota: () => Promise<boolean>,
): Promise<{ file: string; readBack: Uint8Array }> {
  const n = nonce();
  const final = `${fileKey(id)}.${n}${BLOB_SUFFIX}`;
  const first = blobs.rename ? `${TMP_PREFIX}${fileKey(id)}.${n}` : final;
  for (;;) {
    try {
      await blobs.write(first, bytes);
      break;
    } catch (e) {
      await blobs.delete(first).catch(() => {});
      if (!isQuotaError(e) || !(await onQuota())) throw e;
    }
  }
  let readBack: Uint8Array | null;
  try {
    readBack = await blobs.read(first);
    if (!readBack) throw new CorruptBlobError('it vanished');
    // Byte for byte: stronger than the checksums, and a quarter of their time.
    if (!sameBytes(readBack, bytes)) throw new CorruptBlobError(readBack.length === bytes.length ? 'it differs from what was written' : `${readBack.length} bytes were read back of the ${bytes.length} written`);
  } catch (e) {
    await blobs.delete(first).catch(() => {});
    if (!(e instanceof CorruptBlobError)) throw e;
    const why = e.message.replace(/^Corrupt KV cache blob: /, '');
    throw new CorruptBlobError(`the blob read back after writing it failed its check: ${why} (write of ${id})`);
  }
  if (blobs.rename) await blobs.rename(first, final);
  return { file: final, readBack };
}
