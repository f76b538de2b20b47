/** What the engine, the CLI and the linker need from any tokenizer. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** How a chat is rendered: with the assistant's opening turn after it (the default) or not. */
export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
}

export interface Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosIds: readonly number[];
  /** Token ids for text; `addBos` prepends BOS where the model uses one. */
  encode(text: string, opts?: { addBos?: boolean }): number[];
  /** Text of a token sequence (special tokens skipped unless asked for). */
  decode(ids: readonly number[], opts?: { skipSpecial?: boolean }): string;
  /** Renders a chat as prompt text, or undefined when the model has no template. */
  applyChatTemplate?(messages: ChatMessage[], opts?: ChatTemplateOptions): string;
}
