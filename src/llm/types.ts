/** A chat turn sent to a model. */
export interface ChatMessage {
  readonly role: 'user' | 'assistant';
  readonly content: string;
}

/** What a provider is asked to do. */
export interface CompletionRequest {
  readonly model: string;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly maxOutputTokens: number;
  /** Who asks: the mock provider scripts replies per agent; real providers ignore it. */
  readonly agent?: string;
  readonly threadId?: string;
}

export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  readonly cacheReadTokens: number | null;
  readonly cacheWriteTokens: number | null;
  readonly reasoningTokens: number | null;
}

/** A provider's answer to one request (one HTTP round trip). */
export interface ProviderResponse {
  readonly content: string;
  /** The model name the provider reports (may differ from the one asked for). */
  readonly model: string;
  readonly usage: TokenUsage;
}

/** The router's answer: what the handler sees. */
export interface CompletionResult extends ProviderResponse {
  readonly provider: string;
  readonly providerLatencyMs: number;
  readonly totalLatencyMs: number;
  readonly attempts: number;
  readonly cost: number | null;
}

export interface LlmProvider {
  readonly name: string;
  readonly type: 'mock' | 'openai' | 'anthropic';
  readonly priority: number;
  /** Retries of a retryable failure before the router fails over (default 3). */
  readonly maxRetries?: number;
  /** True when this provider serves `model` (exact name or prefix match). */
  serves(model: string): boolean;
  /** One request; throws ProviderHttpError for HTTP-level failures. */
  complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse>;
}

/** The LLM client a handler gets in its context: bound to its agent, thread and signal. */
export interface BoundLlmClient {
  complete(request: {
    readonly system?: string;
    readonly messages: readonly ChatMessage[];
    readonly model?: string;
    readonly maxOutputTokens?: number;
  }): Promise<CompletionResult>;
}
