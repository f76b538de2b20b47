/**
 * The engine's public surface: the only module outside src/engine may import (.dependency-cruiser.cjs checks it).
 * The engine runs a model on WebGPU and knows nothing about chunks: loading (formats, tokenizers), planning GPU
 * memory, the forward pass over any set of cache rows, and moving rows in and out of a working cache.
 */
export { Engine, type GreedyStepsOptions, type GreedyStepsResult, type LoadOptions, type PassOptions, type PassResult } from './engine';
export { UnsupportedModelError, type ModelConfig } from './model/config';
export type { HostTensor, HostWeights } from './model/weights';
export type { KVCache } from './model/kv-cache';
export type { LayerRows, GpuLayerRows } from './model/kv-io';
export type { ScoresRequest, ScoresResult } from './model/forward';
export { MARGIN as TUNE_MARGIN, WARM_MS, describeSettings, takesWideLoadsAny, type DecodeSettings, type DecodeTrial, type DecodeTuning, type TuneOptions, type UploadTuning } from './model/tune';
export { describeTiledWay, sameTiledWay, tiledLaneWays, tiledWays, type PrefillTuning, type TiledWayTiming } from './model/tune-prefill';
export { LONG_SPAN, attentionWays as decodeAttentionWays, describeAttentionWay, type AttentionWay, type AttentionWayTiming, type LongAttentionTuning } from './model/tune-attention';
export { OutOfGpuMemoryError } from './model/gpu-model';
export { DeviceLostError, GpuValidationError, type HostWrite } from './gpu/dispatcher';
export { describeSplit, kvBytesPerToken, kvDtypeFor, paramCount, planGpuMemory, splitMatrices, weightDtypeFor, type AdapterLimits, type GpuPlan } from './model/gpu-plan';
export type { AttentionVariant, GemvVariant, KeysPerThread, LongAttention, MatmulVariant, StoreDType, TiledLanes, TiledWay } from './ops';
export { decodeAttentionKernels, groupedKeysFits, takesWideLoads } from './ops';

// GPU context and kernels.
export { createGpuContext, describeAdapter, NoWebGPUError, type AdapterSummary, type GpuContext } from './gpu/device';
export type { KernelSources } from './gpu/kernels';
export { bundledKernelSources } from './kernel-sources';

// Model files and their formats.
export { detectFormat, loadModelFiles, type LoadedModel, type ModelFiles } from './formats/load';
export { blobSource, bufferSource, ModelFormatError, type ByteSource } from './formats/source';
export { expectedShapes, hfConfigToModelConfig } from './formats/hf';
export { parseGguf } from './formats/gguf';

// Tokenizers.
export type { ChatMessage, Tokenizer } from './tokenizer/types';
export { Llama2cTokenizer } from './tokenizer/llama2c';
export { createGgufTokenizer, tokenizerSpecFromGguf } from './tokenizer/gguf';
export { loadHfTokenizer } from './tokenizer/hf';

// GGUF quantized blocks, kept packed on the GPU (the GPU kit builds random ones).
export { isQuant, noiseBlocks, QUANT, QUANT_TYPES, type QuantType } from './quant';

// Half floats (KVStore keeps rows as f16).
export { f32ArrayToF16, floatsToHalves, floatToHalf, halfRows, halvesToFloats } from './f16';
