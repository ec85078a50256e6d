/** A tool call as the model made it: `arguments` is the JSON text it wrote (possibly malformed). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A chat turn sent to a model: a user turn, an assistant turn (text and/or tool calls), or one tool result. */
export type ChatMessage =
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string; readonly toolCalls?: readonly ToolCall[] }
  | {
      readonly role: 'tool';
      /** The id of the call this answers. */
      readonly toolCallId: string;
      readonly name: string;
      readonly content: string;
      /** The call failed (Anthropic's `is_error`); the content says why. */
      readonly isError?: boolean;
    };

/** A tool offered to the model: name, what it does, and its parameters as a JSON Schema object. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

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

/** Tokens one LLM call used, as the provider reported them. */
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
  /** Tool calls in the order the model made them (several = parallel calls); absent = none. */
  readonly toolCalls?: readonly ToolCall[];
  /** As the provider says it (`stop`, `tool_calls`, `end_turn`, `tool_use`, `length`, ...). */
  readonly finishReason?: string | null;
  /** The model name the provider reports (may differ from the one asked for). */
  readonly model: string;
  readonly usage: TokenUsage;
}

/** The router's answer: what the handler sees. */
export interface CompletionResult extends ProviderResponse {
  readonly toolCalls: readonly ToolCall[];
  readonly finishReason: string | null;
  readonly provider: string;
  readonly providerLatencyMs: number;
  readonly totalLatencyMs: number;
  readonly attempts: number;
  readonly cost: number | null;
  /** The id of the recorded call that answered (see LlmCallRecord). */
  readonly callId: string;
  /** The provider reported more completion tokens than the call's output cap (see LlmCallRecord). */
  readonly overOutputCap: boolean;
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

/** The LLM client a handler gets in its context: bound to its agent, thread and signal. */
export interface BoundLlmClient {
  complete(request: {
    readonly system?: string;
    readonly messages: readonly ChatMessage[];
    readonly model?: string;
    readonly maxOutputTokens?: number;
    readonly tools?: readonly ToolSpec[];
    /** This call repairs an invalid answer (recorded with the call). */
    readonly repair?: boolean;
  }): Promise<CompletionResult>;
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
