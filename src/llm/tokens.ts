import type { CompletionRequest } from './types.js';

/** Rough token count (about four characters a token), the usual rule of thumb. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Estimated prompt tokens of a request: its system prompt, tools and every message (with its tool calls). */
export function estimatePromptTokens(request: Pick<CompletionRequest, 'system' | 'messages' | 'tools'>): number {
  const tools = (request.tools ?? []).reduce((n, t) => n + estimateTokens(t.name + t.description + JSON.stringify(t.parameters)), 0);
  return (
    estimateTokens(request.system) +
    tools +
    request.messages.reduce((n, m) => n + estimateTokens(m.content) + (m.role === 'assistant' ? (m.toolCalls ?? []).reduce((k, c) => k + estimateTokens(c.name + c.arguments), 0) : 0), 0)
  );
}
