import type { CompletionRequest } from './types.js';

/** Rough token count (about four characters a token), the usual rule of thumb. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Estimated prompt tokens of a request: its system prompt and every message. */
export function estimatePromptTokens(request: Pick<CompletionRequest, 'system' | 'messages'>): number {
  return estimateTokens(request.system) + request.messages.reduce((n, m) => n + estimateTokens(m.content), 0);
}
