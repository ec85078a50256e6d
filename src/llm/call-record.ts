import type { LlmRecordMode } from '../config/types.js';
import type { TokenUsage } from './types.js';

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
}

/** One MCP tool call an agent made inside a delivery (requested by the LLM call `llmCallId`). */
export interface ToolCallRecord {
  readonly id: string;
  readonly llmCallId: string;
  readonly threadId: string;
  readonly messageId: string | null;
  readonly agent: string;
  readonly server: string;
  readonly tool: string;
  /** null in `metadata` mode. */
  readonly arguments: unknown;
  /** The tool's text result; null in `metadata` mode or when it failed. */
  readonly result: string | null;
  /** The tool reported an error (MCP `isError`) or the call failed. */
  readonly isError: boolean;
  readonly error: string | null;
  readonly startedAt: number;
  readonly durationMs: number;
}

/** Where records go (the store behind src/store). */
export interface CallRecordSink {
  recordCall(record: LlmCallRecord): void;
  recordTool(record: ToolCallRecord): void;
}

/** Applies `llm.record`: `full` keeps all, `metadata` drops prompts, answers and tool arguments/results, `off` keeps nothing. */
export class CallRecorder {
  constructor(
    private readonly sink: CallRecordSink,
    readonly mode: LlmRecordMode,
  ) {}

  call(record: LlmCallRecord): void {
    if (this.mode === 'off') return;
    if (this.mode === 'full') {
      this.sink.recordCall(record);
      return;
    }
    this.sink.recordCall({
      ...record,
      request: null,
      response: record.response && {
        text: null,
        toolCalls: record.response.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: null })),
        finishReason: record.response.finishReason,
      },
    });
  }

  tool(record: ToolCallRecord): void {
    if (this.mode === 'off') return;
    this.sink.recordTool(this.mode === 'full' ? record : { ...record, arguments: null, result: null });
  }
}
