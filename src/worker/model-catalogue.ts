/**
 * Real instruction models a user who is online can load from the Hugging
 * Face Hub in one click (the Model section's catalogue), each with the
 * parameters, download size and GPU memory computed from its own
 * config.json (catalogue/, no weights needed), where its chat template comes
 * from, and how questions are put to it. A load goes through the Hub source
 * like a typed id: progress, Cancel, the OPFS cache and the worker's check of
 * the config against the adapter before any weight is downloaded.
 */
import { hfConfigToModelConfig, kvDtypeFor, paramCount, planGpuMemory, splitMatrices, weightDtypeFor, type AdapterLimits, type GpuPlan, type ModelConfig } from '../engine';

/** How questions are put to an entry's model (the page's PromptProfile, without sample documents). */
export interface PromptProfile {
  /** The uncached text after the chunks; `{question}` stands for what the user typed. */
  framing: string;
  /** A question that fits the model. */
  example: string;
}
import smol360 from './catalogue/HuggingFaceTB--SmolLM2-360M-Instruct.config.json';
import smol1700 from './catalogue/HuggingFaceTB--SmolLM2-1.7B-Instruct.config.json';
import qwen05 from './catalogue/Qwen--Qwen2.5-0.5B-Instruct.config.json';
import qwen15 from './catalogue/Qwen--Qwen2.5-1.5B-Instruct.config.json';
import llama1 from './catalogue/unsloth--Llama-3.2-1B-Instruct.config.json';
import gemma1 from './catalogue/unsloth--gemma-3-1b-it.config.json';

export interface CatalogueEntry {
  /** The Hub repository a load downloads (its config.json is in catalogue/). */
  repo: string;
  label: string;
  /** Who publishes the weights; for a copy, of what and why. */
  source: string;
  licence: string;
  /** Where the chat template comes from. */
  chatTemplate: string;
  prompt: PromptProfile;
  /** The repository's config.json. */
  config: Record<string, unknown>;
}

/** The instruction the SmolLM2-135M-Instruct entry of scripts/models.json uses: a short answer from the documents above. */
const FRAMING = '\n\nAnswer the question using the text above, in a few words.\nQuestion: {question}';
const EXAMPLE = 'Where did the little bird live?';
const prompt: PromptProfile = { framing: FRAMING, example: EXAMPLE };
const TEMPLATE = "the repository's tokenizer_config.json (`chat_template`), downloaded with the model";

export const CATALOGUE: readonly CatalogueEntry[] = [
  { repo: 'HuggingFaceTB/SmolLM2-360M-Instruct', label: 'SmolLM2 360M Instruct', source: 'Hugging Face (original)', licence: 'Apache-2.0', chatTemplate: `ChatML, from ${TEMPLATE}`, prompt, config: smol360 },
  { repo: 'Qwen/Qwen2.5-0.5B-Instruct', label: 'Qwen2.5 0.5B Instruct', source: 'Qwen (original)', licence: 'Apache-2.0', chatTemplate: `ChatML with Qwen's system prompt, from ${TEMPLATE}`, prompt, config: qwen05 },
  {
    repo: 'unsloth/gemma-3-1b-it', label: 'Gemma 3 1B IT', licence: 'Gemma Terms of Use', chatTemplate: `Gemma turns, from ${TEMPLATE}`, prompt, config: gemma1,
    source: "Unsloth's public copy of Google's BF16 weights (google/gemma-3-1b-it is gated, and LegoKV sends no token)",
  },
  {
    repo: 'unsloth/Llama-3.2-1B-Instruct', label: 'Llama 3.2 1B Instruct', licence: 'Llama 3.2 Community License', chatTemplate: `Llama 3 headers, from ${TEMPLATE}`, prompt, config: llama1,
    source: "Unsloth's public copy of Meta's BF16 weights (meta-llama/Llama-3.2-1B-Instruct is gated, and LegoKV sends no token)",
  },
  { repo: 'Qwen/Qwen2.5-1.5B-Instruct', label: 'Qwen2.5 1.5B Instruct', source: 'Qwen (original)', licence: 'Apache-2.0', chatTemplate: `ChatML with Qwen's system prompt, from ${TEMPLATE}`, prompt, config: qwen15 },
  { repo: 'HuggingFaceTB/SmolLM2-1.7B-Instruct', label: 'SmolLM2 1.7B Instruct', source: 'Hugging Face (original)', licence: 'Apache-2.0', chatTemplate: `ChatML, from ${TEMPLATE}`, prompt, config: smol1700 },
];

/** The catalogue entry of a loaded model, by the id a Hub load gives it (the repository). */
export const catalogueEntry = (id: string | undefined): CatalogueEntry | undefined => CATALOGUE.find((e) => e.repo === id);

/**
 * The model config as the loaders will build it once the weights are there: Qwen2's q/k/v biases and an
 * untied head are known from the architecture and tie_word_embeddings (the worker's preflight assumes neither,
 * which changes its byte count by a few KiB and never its verdict).
 */
export function entryConfig(e: CatalogueEntry): ModelConfig {
  const tied = e.config.tie_word_embeddings === true;
  return hfConfigToModelConfig(e.config, { hasQkvBias: e.config.model_type === 'qwen2', hasLmHead: !tied }, e.repo);
}

export interface EntrySize {
  params: number;
  /** The safetensors download: BF16, two bytes a weight. */
  downloadBytes: number;
  /** What the app stores weights in on the GPU (f16 above 50M weights). */
  weightDtype: GpuPlan['weightDtype'];
  weightBytes: number;
  /** How the app keeps keys and values (f16 above 50M weights, kvDtypeFor), and their bytes a token. */
  kvDtype: GpuPlan['kvDtype'];
  kvBytesPerToken: number;
}

/** Sizes from the config alone (the buffer limits do not change the totals, only how matrices are split). */
export function entrySize(e: CatalogueEntry): EntrySize {
  const c = entryConfig(e);
  const plan = planGpuMemory(c, weightDtypeFor(c), { maxStorageBufferBindingSize: Number.MAX_SAFE_INTEGER, maxBufferSize: Number.MAX_SAFE_INTEGER }, undefined, kvDtypeFor(c));
  return { params: paramCount(c), downloadBytes: paramCount(c) * 2, weightDtype: plan.weightDtype, weightBytes: plan.weightBytes, kvDtype: plan.kvDtype, kvBytesPerToken: plan.kvBytesPerToken };
}

/** Fits (with the matrices stored in several buffers, and in how many), or refused with the plan's reasons. */
export type Verdict = { fits: true; split: { label: string; parts: number }[] } | { fits: false; problems: string[] };

/**
 * Whether the entry loads on an adapter with these limits: the check the worker makes from the Hub's config.json
 * (engine.plan over hfConfigToModelConfig, at the precision the engine picks) before any weight is downloaded.
 */
export function verdictOn(e: CatalogueEntry, limits: AdapterLimits): Verdict {
  const c = hfConfigToModelConfig(e.config, undefined, e.repo);
  const plan = planGpuMemory(c, weightDtypeFor(c), limits);
  if (plan.problems.length) return { fits: false, problems: plan.problems };
  return { fits: true, split: splitMatrices(plan) };
}
