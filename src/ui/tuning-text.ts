/** What timing decode's and prefill's kernels at load chose on this GPU, as the model panel says it (ModelPicker). */
import type { DecodeTuningInfo, PrefillTuningInfo } from '../worker/protocol';

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

export function prefillTuningText(t: PrefillTuningInfo): string {
  if ('error' in t) return `Prefill attention: the default way (timing the ways failed: ${t.error})`;
  const vs = t.chosen === t.defaults ? ' (the default)' : `; the default (${t.defaults}) took ${t.defaultUs.toFixed(0)} µs`;
  const refused = t.refused.length ? `. Not used: ${t.refused.join('; ')}` : '';
  return `Prefill attention, timed on this GPU (${t.ways} ways in ${(t.ms / 1000).toFixed(2)} s): ${t.chosen}, ${t.us.toFixed(0)} µs a layer for ${t.rows} rows over ${t.keys} keys${vs}${refused}`;
}
