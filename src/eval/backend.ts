/**
 * What the runner needs from an inference backend: compile a case's chunks
 * (before timing starts), answer it with one linking algorithm (greedy),
 * and drop its caches. The Node backend (node-backend.ts) runs the
 * ContextCache API on the `webgpu` package.
 */
import { compileVariantOf } from '../kvlink/algorithms';
import type { TtftBreakdown } from '../kvlink/link';
import type { EvalCase } from './dataset';

/** Which compile variant an algorithm links. */
export type VariantName = ReturnType<typeof compileVariantOf>;
export const variantFor = compileVariantOf;

export interface PreparedCase {
  case: EvalCase;
  /** Cache ids of the case's chunks, in order, per compile variant. */
  ids: Partial<Record<VariantName, string[]>>;
  compileMs: number;
}

export interface Answer {
  text: string;
  ttft: TtftBreakdown;
  /** Request to first-token event, wall clock (adds tokenising and rendering the prompt). */
  wallTtftMs: number;
  recomputed: number;
  recomputedFraction: number;
  promptTokens: number;
  newTokens: number;
  decodeTokensPerS: number;
  cancelled: boolean;
}

export interface EvalBackend {
  readonly name: string;
  readonly adapter: string;
  readonly model: string;
  readonly hasChatTemplate: boolean;
  /** How the engine keeps keys and values (by the app's rule unless asked otherwise). */
  readonly kvDtype: 'f32' | 'f16';
  prepare(c: EvalCase, variants: ReadonlySet<VariantName>): Promise<PreparedCase>;
  /** Makes sure the case's caches sit in the store's fastest tier (an untimed cheap link per variant). */
  preload(p: PreparedCase): Promise<void>;
  answer(p: PreparedCase, algorithm: string, maxNewTokens: number, signal?: AbortSignal): Promise<Answer>;
  release(p: PreparedCase): Promise<void>;
  close(): Promise<void>;
}
