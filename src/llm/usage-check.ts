import { Errors } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';
import type { TokenUsage } from './types.js';

/**
 * A token count as a provider reported it: absent (undefined or null) is null; anything but a
 * non-negative integer is the provider's bad response (a negative count would be subtracted
 * from billing, a fraction or a string cannot be billed).
 */
export function tokenCount(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  const shown = JSON.stringify(value) ?? String(value);
  throw Errors.LLM_BAD_RESPONSE(`usage ${field} is ${shown.length > 40 ? `${shown.slice(0, 40)}...` : shown}: token counts are non-negative integers`);
}

/**
 * Completion tokens above the output cap the call sent (max_tokens): the provider bills them, so
 * they are kept, but the call is flagged, and each provider doing so is logged once (for the
 * life of this watch: the organism's, across reloads).
 */
export class OutputCapWatch {
  private readonly warned = new Set<string>();

  constructor(private readonly logger: Logger | null) {}

  /** True when `usage` reports more completion tokens than `maxOutputTokens`. */
  check(provider: string, model: string, maxOutputTokens: number, usage: TokenUsage): boolean {
    if (usage.completionTokens <= maxOutputTokens) return false;
    if (!this.warned.has(provider)) {
      this.warned.add(provider);
      this.logger?.warn(
        { provider, model, maxOutputTokens, completionTokens: usage.completionTokens },
        'LLM provider reported more completion tokens than the call allowed (max_tokens); they are billed as reported and the call is flagged (overOutputCap); logged once per provider',
      );
    }
    return true;
  }
}
