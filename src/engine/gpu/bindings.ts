/**
 * A dispatch's bindings, compared slot for slot: the Dispatcher keeps each uniform slot's last bind group and
 * reuses it where a launch binds the same buffers and ranges (a decode step repeats its launches slot for slot).
 */
export type Binding = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

/** A dispatch's bindings as [binding, buffer, offset, size, ...] in binding order (what slotMatches compares). */
export function flatBindings(bindings: Record<number, Binding>): unknown[] {
  const parts: unknown[] = [];
  for (const k in bindings) {
    const b = bindings[k];
    if ('mapAsync' in b) parts.push(k, b, 0, -1);
    else parts.push(k, b.buffer, b.offset ?? 0, b.size ?? -1);
  }
  return parts;
}

/** Whether `bindings` bind the same buffers, ranges and slots as `parts` (flatBindings), without building a key. */
export function slotMatches(parts: unknown[], bindings: Record<number, Binding>): boolean {
  let i = 0;
  for (const k in bindings) {
    const b = bindings[k];
    if (i + 4 > parts.length || parts[i] !== k) return false;
    if ('mapAsync' in b ? parts[i + 1] !== b || parts[i + 2] !== 0 || parts[i + 3] !== -1
      : parts[i + 1] !== b.buffer || parts[i + 2] !== (b.offset ?? 0) || parts[i + 3] !== (b.size ?? -1)) return false;
    i += 4;
  }
  return i === parts.length;
}
