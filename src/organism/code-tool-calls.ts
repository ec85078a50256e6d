import type { AgentWorldView } from '../agent/llm-agent.js';
import { runCodeTool, type CodeToolOutcome } from '../agent/code-tool-run.js';
import type { LlmRecordMode } from '../config/types.js';
import type { LlmCallStore } from '../core/storage.js';
import { Errors } from '../errors/catalogue.js';
import { CallRecorder } from '../llm/call-record.js';

type CodeCall = Parameters<AgentWorldView['callCode']>[0];

/**
 * Runs the code tools LLM agents call inside their turns (`tools:`), each call recorded beside
 * the LLM call that asked for it, as MCP tool calls are (llm.record): `server` is the tool's
 * module, `kind` is `code`.
 */
export class CodeToolCalls {
  constructor(
    private readonly calls: LlmCallStore,
    /** What is recorded of each call, read at the call (a reload may change it). */
    private readonly recordMode: () => LlmRecordMode,
  ) {}

  async call(call: CodeCall): Promise<{ text: string; isError: boolean }> {
    const startedAt = Date.now();
    const started = performance.now();
    let outcome: CodeToolOutcome;
    try {
      outcome = await runCodeTool(call.tool, call.type, call.arguments, {
        signal: call.signal,
        threadId: call.threadId,
        messageId: call.messageId,
        agent: call.agent,
        log: call.log,
      });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      if (Errors.ABORTED.is(err)) this.record(call, startedAt, started, { text: error, isError: true, error });
      throw err;
    }
    this.record(call, startedAt, started, outcome);
    return { text: outcome.text, isError: outcome.isError };
  }

  private record(call: CodeCall, startedAt: number, started: number, outcome: CodeToolOutcome): void {
    const outcomeOf = { result: outcome.error === null ? outcome.text : null, isError: outcome.isError, error: outcome.error };
    new CallRecorder(this.calls, this.recordMode()).toolRun(call, { kind: 'code', server: call.tool.module, tool: call.tool.name }, outcomeOf, startedAt, started);
  }
}
