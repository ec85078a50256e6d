import type { ChatMessage, ProviderResponse, TokenUsage, ToolSpec } from '../core/llm.js';

export type { BoundLlmClient, ChatMessage, CompletionResult, ProviderResponse, TokenUsage, ToolCall, ToolSpec } from '../core/llm.js';

/** What a provider is asked to do. */
export interface CompletionRequest {
  readonly model: string;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly maxOutputTokens: number;
  /** Tools the model may call (native tool calling); none = a plain completion. */
  readonly tools?: readonly ToolSpec[];
  /** llm.max_reply_bytes: a provider stops reading (and aborts the request) once the reply passes it. */
  readonly maxReplyBytes?: number;
  /** Who asks: the mock provider scripts replies per agent; real providers ignore it. */
  readonly agent?: string;
  readonly threadId?: string;
}

/**
 * What a provider reports while a request runs: the body as sent (never headers, so never a
 * key), each text delta as it streams in, and usage whenever the provider states it (so an
 * aborted stream still tells what it had cost).
 */
export interface CallObserver {
  onRequest?(body: unknown): void;
  onDelta?(text: string): void;
  onUsage?(usage: TokenUsage): void;
}

/** An LLM provider: what `createProvider` returns and what the router calls. */
export interface LlmProvider {
  readonly name: string;
  readonly type: 'mock' | 'openai' | 'anthropic';
  readonly priority: number;
  /** Retries of a retryable failure before the router fails over (default 3). */
  readonly maxRetries?: number;
  /** True when this provider serves `model` (exact name or prefix match). */
  serves(model: string): boolean;
  /** One request; throws ProviderHttpError for HTTP-level failures. */
  complete(request: CompletionRequest, signal: AbortSignal, observer?: CallObserver): Promise<ProviderResponse>;
}

/** Zero usage, for providers that report none. */
export const NO_USAGE: TokenUsage = {
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  cacheReadTokens: null,
  cacheWriteTokens: null,
  reasoningTokens: null,
};
