/** One LLM call, as recorded by the usage tracker. */
export interface UsageEvent {
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
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  readonly cacheReadTokens: number | null;
  readonly cacheWriteTokens: number | null;
  readonly reasoningTokens: number | null;
  /** Time spent in the successful provider request. */
  readonly providerLatencyMs: number;
  /** Wall time of the whole call including retries and backoff waits. */
  readonly totalLatencyMs: number;
  /** USD; null when the model has no price (counted as unpriced, never 0). */
  readonly cost: number | null;
  /** The thread's metadata (orgId, userId, ...). */
  readonly metadata: Readonly<Record<string, string>>;
}

export type UsageSubscriber = (event: UsageEvent) => void;
