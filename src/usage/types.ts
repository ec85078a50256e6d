import type { TokenUsage } from '../llm/types.js';

/** One LLM call, as recorded by the usage tracker: its token counts are the provider's. */
export interface UsageEvent extends TokenUsage {
  /** Unique id of the event (UUIDv7). */
  readonly id: string;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  readonly threadId: string;
  readonly agentId: string;
  /** The delivery (message id) whose handler made the call, if any. */
  readonly messageId: string | null;
  readonly model: string;
  readonly provider: string;
  /** Time spent in the successful provider request. */
  readonly providerLatencyMs: number;
  /** Wall time of the whole call including retries and backoff waits. */
  readonly totalLatencyMs: number;
  /** USD; null when the model has no price (counted as unpriced, never 0). */
  readonly cost: number | null;
  /** The thread's metadata (orgId, userId, ...). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Called with every usage event (`UsageTracker.subscribe`). */
export type UsageSubscriber = (event: UsageEvent) => void;
