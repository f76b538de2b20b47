/** What timing decode's kernels at load chose on this GPU, as the model panel says it (ModelPicker). */
import type { DecodeTuningInfo } from '../worker/protocol';

export function decodeTuningText(t: DecodeTuningInfo): string {
  if ('error' in t) return `Decode kernels: the defaults (timing them failed: ${t.error})`;
  const same = t.chosen === t.defaults;
  const long = t.long
    ? `. From ${t.long.from} keys a token attends with ${t.long.attention} (over ${t.long.span} keys: ${t.long.us.toFixed(0)} µs a layer, against ${t.long.shortUs.toFixed(0)})`
    : t.longError !== undefined
      ? `. Long spans keep that kernel (timing attention alone over them failed: ${t.longError})`
      : '';
  return (
    `Decode kernels, timed on this GPU (${t.ways} ways in ${(t.ms / 1000).toFixed(1)} s): ${t.chosen}, ${t.msPerStep.toFixed(2)} ms a token` +
    (same ? ' (the defaults)' : `; the defaults (${t.defaults}) took ${t.defaultMsPerStep.toFixed(2)} ms`) +
    long
  );
}
