import type { LoadedOrganism, LlmRecordMode } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import { CallRecorder } from '../llm/call-record.js';
import { McpHub, mcpBaseDir, type McpTool, type McpToolResult } from '../mcp/hub.js';
import type { AgentWorldView } from '../agent/llm-agent.js';
import type { LlmCallStore } from '../core/storage.js';
import type { Logger } from '../util/logger.js';

type McpCall = Parameters<AgentWorldView['callMcp']>[0];

/**
 * The MCP servers LLM agents call tools on, each call recorded beside the LLM calls
 * (llm.record). A reload that changes the servers gets new connections.
 */
export class McpCalls {
  private hub: McpHub;

  constructor(
    loaded: LoadedOrganism,
    private readonly calls: LlmCallStore,
    /** What is recorded of each call, read at the call (a reload may change it). */
    private readonly recordMode: () => LlmRecordMode,
    private readonly logger: Logger,
  ) {
    this.hub = this.makeHub(loaded);
  }

  tools(servers: Parameters<McpHub['tools']>[0]): Promise<McpTool[]> {
    return this.hub.tools(servers);
  }

  async call(call: McpCall): Promise<McpToolResult> {
    const startedAt = Date.now();
    const started = performance.now();
    let result: McpToolResult;
    let error: string | null = null;
    try {
      result = await this.hub.call(call.tool.server, call.tool.name, call.arguments, call.signal);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      result = { text: error, isError: true };
      if (Errors.ABORTED.is(err)) {
        this.record(call, startedAt, started, null, error);
        throw err;
      }
    }
    this.record(call, startedAt, started, result, error);
    return result;
  }

  /** Changed MCP servers get new connections (calls under way on the old ones fail as the old hub closes). */
  reload(next: LoadedOrganism, current: LoadedOrganism): void {
    if (JSON.stringify(next.config.mcpServers ?? []) !== JSON.stringify(current.config.mcpServers ?? [])) {
      const old = this.hub;
      this.hub = this.makeHub(next);
      void old.close();
    }
  }

  close(): Promise<void> {
    return this.hub.close();
  }

  private makeHub(loaded: LoadedOrganism): McpHub {
    return new McpHub(loaded.config.mcpServers ?? [], mcpBaseDir(loaded.path), this.logger);
  }

  private record(call: McpCall, startedAt: number, started: number, result: McpToolResult | null, error: string | null): void {
    const outcome = { result: error === null ? (result?.text ?? null) : null, isError: error !== null || (result?.isError ?? false), error };
    new CallRecorder(this.calls, this.recordMode()).toolRun(call, { kind: 'mcp', server: call.tool.server, tool: call.tool.name }, outcome, startedAt, started);
  }
}
