import type { ModelPrice } from '../config/types.js';
import type { TokenUsage } from '../llm/types.js';

const price = (prompt: number, completion: number): ModelPrice => Object.freeze({ prompt, completion, cacheRead: null, cacheWrite: null });

/** USD per 1M tokens (reference section 5). Matched by longest prefix of the model name. */
export const DEFAULT_PRICING: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'grok-4.1': price(3, 15),
  'grok-3': price(3, 15),
  'claude-opus-4': price(15, 75),
  'claude-sonnet-4': price(3, 15),
  'claude-sonnet-3-5': price(3, 15),
  'gpt-4o': price(2.5, 10),
  'gpt-4o-mini': price(0.15, 0.6),
  o1: price(15, 60),
  'o3-mini': price(1.1, 4.4),
});

/**
 * Prices LLM calls. Overrides from organism.yaml win over the defaults for the same key; the
 * longest matching prefix wins overall. A model with no price costs `null` (unpriced), never 0.
 *
 * Cache tokens: providers report cache reads/writes as part of (OpenAI) or beside (Anthropic)
 * the prompt tokens; both adapters normalise so that `promptTokens` includes them. Here
 * `promptTokens` is billed at the prompt price, except the cache-read and cache-write portions,
 * which are billed at `cacheRead`/`cacheWrite` when those prices are set (and at the prompt
 * price otherwise). Cache counts larger than the prompt are capped at it, so a call is never
 * billed for more prompt tokens than it had. Reasoning tokens are part of `completionTokens`
 * (as OpenAI reports them) and are billed at the completion price.
 */
export class Pricing {
  private readonly table: ReadonlyArray<[string, ModelPrice]>;

  constructor(overrides: Readonly<Record<string, ModelPrice>> = {}) {
    const merged = { ...DEFAULT_PRICING, ...overrides };
    // Longest key first, so the first prefix match is the longest.
    this.table = Object.entries(merged).sort((a, b) => b[0].length - a[0].length);
  }

  priceFor(model: string): ModelPrice | null {
    for (const [prefix, p] of this.table) if (model.startsWith(prefix)) return p;
    return null;
  }

  cost(model: string, usage: TokenUsage): number | null {
    const p = this.priceFor(model);
    if (!p) return null;
    const cacheRead = Math.min(usage.cacheReadTokens ?? 0, usage.promptTokens);
    const cacheWrite = Math.min(usage.cacheWriteTokens ?? 0, usage.promptTokens - cacheRead);
    const plainPrompt = usage.promptTokens - cacheRead - cacheWrite;
    const usd = plainPrompt * p.prompt + cacheRead * (p.cacheRead ?? p.prompt) + cacheWrite * (p.cacheWrite ?? p.prompt) + usage.completionTokens * p.completion;
    return usd / 1_000_000;
  }
}
