/**
 * The chat formats a GGUF tokenizer renders itself, when its file names one LegoKV knows (`ChatFormat`):
 * Gemma's turns and ChatML. Other templates go through @huggingface/transformers.
 */
import type { ChatMessage, ChatTemplateOptions } from './types';

/** The chat formats rendered here. */
export type ChatFormat = 'gemma' | 'chatml';

/**
 * Gemma's turn format (as its Jinja template renders it, minus the leading
 * BOS: encode with `addBos: true`). A system message is folded into the first
 * user turn; the assistant role is called "model"; contents are trimmed.
 */
export function renderGemma(messages: ChatMessage[], opts: ChatTemplateOptions = {}): string {
  let prefix = '';
  let msgs = messages;
  if (msgs[0]?.role === 'system') {
    prefix = msgs[0].content + '\n\n';
    msgs = msgs.slice(1);
  }
  let s = '';
  msgs.forEach((m, i) => {
    const role = m.role === 'assistant' ? 'model' : m.role;
    s += `<start_of_turn>${role}\n${i === 0 ? prefix : ''}${m.content.trim()}<end_of_turn>\n`;
  });
  if (opts.addGenerationPrompt ?? true) s += '<start_of_turn>model\n';
  return s;
}

/** ChatML (Qwen2, SmolLM2), with the template's default system prompt when it has one. */
export function renderChatML(messages: ChatMessage[], defaultSystem: string | undefined, opts: ChatTemplateOptions = {}): string {
  let s = '';
  if (defaultSystem !== undefined && messages[0]?.role !== 'system') {
    s += `<|im_start|>system\n${defaultSystem}<|im_end|>\n`;
  }
  for (const m of messages) s += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
  if (opts.addGenerationPrompt ?? true) s += '<|im_start|>assistant\n';
  return s;
}
