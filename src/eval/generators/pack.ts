/**
 * Packing text units (sentences, examples) into chunks of at most
 * `maxTokens` tokens as the model's tokenizer counts them: each chunk is
 * measured as the KVCompile step will see it (the chunk's own text, encoded
 * without BOS).
 */
export type TokenCounter = (text: string) => number;

export class ChunkPacker {
  readonly chunks: string[] = [];
  readonly chunkTokens: number[] = [];
  private cur = '';
  private curTokens = 0;

  constructor(
    readonly maxTokens: number,
    readonly count: TokenCounter,
  ) {}

  /** Tokens in the finished chunks plus the current one. */
  get total(): number {
    return this.chunkTokens.reduce((a, b) => a + b, 0) + this.curTokens;
  }

  /** Number of chunks, the current one included. */
  get chunkCount(): number {
    return this.chunks.length + (this.cur ? 1 : 0);
  }

  /** Whether `unit` fits in the current chunk (false when there is none). */
  fits(unit: string, sep = ' '): boolean {
    return !!this.cur && this.count(this.cur + sep + unit) <= this.maxTokens;
  }

  /** Appends `unit` (joined with `sep` inside a chunk), starting a new chunk when it does not fit. */
  add(unit: string, sep = ' '): void {
    if (this.cur) {
      const joined = this.cur + sep + unit;
      const n = this.count(joined);
      if (n <= this.maxTokens) {
        this.cur = joined;
        this.curTokens = n;
        return;
      }
      this.flush();
    }
    const n = this.count(unit);
    if (n > this.maxTokens) throw new Error(`A unit of ${n} tokens does not fit in a ${this.maxTokens}-token chunk`);
    this.cur = unit;
    this.curTokens = n;
  }

  /** Closes the current chunk. */
  flush(): void {
    if (!this.cur) return;
    this.chunks.push(this.cur);
    this.chunkTokens.push(this.curTokens);
    this.cur = '';
    this.curTokens = 0;
  }

  finish(): { chunks: string[]; tokens: number[] } {
    this.flush();
    return { chunks: this.chunks, tokens: this.chunkTokens };
  }
}
