/** The LLM vocabulary a handler and the stores see: chat turns, tools, usage, the bound client, and the records of calls. Implementations (providers, the router, the recorder) are in src/llm. */

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

/**
 * One LLM call (one provider attempt), as recorded with the delivery that made it: the request
 * as sent (the body, never headers: no key), the answer, usage, cost, latency, and why it
 * failed if it did. In `metadata` mode prompts and answers are left out.
 */
export interface LlmCallRecord {
  readonly id: string;
  readonly threadId: string;
  readonly messageId: string | null;
  readonly agent: string;
  readonly provider: string;
  /** The model asked for. */
  readonly model: string;
  /** The model the provider reports (null when it failed before saying). */
  readonly responseModel: string | null;
  /** 1-based, across retries and failover within one call of the agent. */
  readonly attempt: number;
  /** This call asked the model to repair an invalid answer. */
  readonly repair: boolean;
  /** ms since the epoch. */
  readonly startedAt: number;
  readonly latencyMs: number;
  /** The request body as sent; null in `metadata` mode. */
  readonly request: unknown;
  /** Names of the tools offered. */
  readonly tools: readonly string[];
  readonly response: {
    /** null in `metadata` mode. */
    readonly text: string | null;
    /** `arguments` null in `metadata` mode. */
    readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string | null }>;
    readonly finishReason: string | null;
  } | null;
  /** As the provider reported it; for an aborted stream, what it had reported until then. */
  readonly usage: TokenUsage | null;
  /** The output cap sent with the request (max_tokens). */
  readonly maxOutputTokens: number;
  /** The provider reported more completion tokens than `maxOutputTokens`: billed as reported, flagged here. */
  readonly overOutputCap: boolean;
  readonly cost: number | null;
  readonly error: string | null;
  /** A guardrail (`guards:`) stopped this call: which, at which stage, and why (`error` starts with `guardrail:`). Absent: none did. */
  readonly guard?: { readonly name: string; readonly stage: 'input' | 'output'; readonly reason: string };
  /** What `llm.record` kept of it (absent on calls recorded before this field: read `request`). */
  readonly record?: 'full' | 'metadata';
  /**
   * sha256 of the request as it was sent (agent, model, output cap, system prompt, messages,
   * tools offered: see llm/request-hash.ts), computed before `llm.record` drops anything; absent
   * on calls recorded before time travel (issue 29).
   */
  readonly requestHash?: string;
  /** Answered from the record of an earlier thread (a fork's replay): no provider was called, no cost charged. */
  readonly replayed?: boolean;
  /** The recorded call that answered it (replayed calls only). */
  readonly replayOf?: string;
}

/** One tool call (MCP or code) an agent made inside a delivery (requested by the LLM call `llmCallId`). */
export interface ToolCallRecord {
  readonly id: string;
  readonly llmCallId: string;
  readonly threadId: string;
  readonly messageId: string | null;
  readonly agent: string;
  /** `mcp`: a tool of an MCP server; `code`: a function of the agent's `tools:` (absent on records made before code tools: `mcp`). */
  readonly kind?: 'mcp' | 'code';
  /** The MCP server, or the code tool's module (`./tools.ts`). */
  readonly server: string;
  /** The MCP server's name of the tool, or the code tool's name. */
  readonly tool: string;
  /** null in `metadata` mode. */
  readonly arguments: unknown;
  /** The tool's text result; null in `metadata` mode or when it failed. */
  readonly result: string | null;
  /** The tool reported an error (MCP `isError`) or the call failed (a code tool threw, timed out or got invalid arguments). */
  readonly isError: boolean;
  readonly error: string | null;
  readonly startedAt: number;
  readonly durationMs: number;
  /** A fork's tool call whose result was reused from the source's record (listener `replay: recorded`): not run. */
  readonly replayed?: boolean;
}

/** Where records go (the store behind src/store). */
export interface CallRecordSink {
  recordCall(record: LlmCallRecord): void;
  recordTool(record: ToolCallRecord): void;
}
