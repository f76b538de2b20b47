/**
 * A tape: launches the Dispatcher recorded (startTape … endTape) so that it can issue them again (replay) without
 * the code that chose them. A greedy decode step records a hundred launches or more, each chosen, sized and bound
 * by the forward pass and the ops, while step after step they are the same launches on the same buffers with a few
 * parameters changed: the new row, its position, the cache's length, the keys each layer kind scans. Those
 * parameters carry a tag (Param.tag), the index of their value in a step's values. A replay writes each segment's
 * recorded uniform slots back in one copy, the tagged words from the new step's values, and issues the launches
 * with their recorded pipelines, bind groups and workgroup counts, submitting where the recording did. Whether a
 * tape fits a step is the caller's to know (ForwardPass.stepKey).
 */

export interface TapedLaunch {
  pipeline: GPUComputePipeline;
  bg: GPUBindGroup;
  groups: readonly number[];
  /** How many uniform words it has (Dispatcher.onLaunch). */
  params: number;
}

/** Launches recorded between two submissions, in consecutive uniform slots from `slot0`. */
export interface TapeSegment {
  slot0: number;
  /** The uniform words of its slots as recorded, slot after slot (each slot's whole 256 bytes). */
  words: Uint32Array;
  /** Pairs (index into words, tag): the words that take `values[tag]` on replay. */
  tags: number[];
  launches: TapedLaunch[];
  /** Whether the recording submitted after it. */
  flush: boolean;
}

export interface Tape {
  segments: TapeSegment[];
  /** The arena's epoch when recorded (Dispatcher): bind groups of another epoch bind a destroyed arena. */
  epoch: number;
}
