import type { LlmRecordMode } from '../config/types.js';
import type { CallRecordSink, LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import { newId } from '../util/ids.js';

export type { CallRecordSink, LlmCallRecord, ToolCallRecord } from '../core/llm.js';

/** Applies `llm.record`: `full` keeps all, `metadata` drops prompts, answers and tool arguments/results, `off` keeps nothing. */
export class CallRecorder {
  constructor(
    private readonly sink: CallRecordSink,
    readonly mode: LlmRecordMode,
  ) {}

  call(record: LlmCallRecord): void {
    if (this.mode === 'off') return;
    if (this.mode === 'full') {
      this.sink.recordCall({ ...record, record: 'full' });
      return;
    }
    this.sink.recordCall({
      ...record,
      record: 'metadata',
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

  /** A tool run inside a turn (MCP or code): what was called, where, and how it ended, timed from `started` (performance.now()). */
  toolRun(
    call: Pick<ToolCallRecord, 'llmCallId' | 'threadId' | 'messageId' | 'agent' | 'arguments'>,
    target: Pick<ToolCallRecord, 'kind' | 'server' | 'tool'>,
    outcome: Pick<ToolCallRecord, 'result' | 'isError' | 'error'>,
    startedAt: number,
    started: number,
  ): void {
    const { llmCallId, threadId, messageId, agent, arguments: args } = call;
    this.tool({ id: newId(), llmCallId, threadId, messageId, agent, ...target, arguments: args, ...outcome, startedAt, durationMs: performance.now() - started });
  }
}
