import type { UsageEvent } from '../../src/usage/types.js';

/** Token counts as a provider reports them (cache counts null when not reported). */
export const usage = (promptTokens: number, completionTokens: number, cacheReadTokens: number | null = null, cacheWriteTokens: number | null = null) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
  cacheReadTokens,
  cacheWriteTokens,
  reasoningTokens: null,
});

/** A usage event with plain defaults; override what the test is about. */
export function event(over: Partial<UsageEvent> = {}): UsageEvent {
  return {
    id: 'e',
    timestamp: 0,
    threadId: 't',
    agentId: 'a',
    messageId: null,
    model: 'gpt-4o',
    provider: 'p',
    promptTokens: 10,
    completionTokens: 5,
    totalTokens: 15,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    providerLatencyMs: 10,
    totalLatencyMs: 20,
    cost: 0.001,
    metadata: {},
    ...over,
  };
}
