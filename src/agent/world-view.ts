import type { ApprovalState } from '../core/approval.js';
import type { ListenerConfig, ReplyFormat } from '../config/types.js';
import type { McpTool, McpToolResult } from '../mcp/hub.js';
import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import type { HandlerLogger } from '../core/handler.js';
import type { CodeTool } from './code-tool.js';

/** What an agent can see of the organism: listeners by name (only its peers are asked for). */
export interface AgentWorldView {
  readonly registry: PayloadRegistry;
  /** The organism's `llm.max_reply_bytes` and `llm.max_messages_per_reply`. */
  readonly replyLimits: { readonly maxReplyBytes: number; readonly maxMessagesPerReply: number };
  /** A listener's name, description and the payload types it accepts (one, or those of `payload: [A, B]`). */
  listener(name: string): { name: string; description: string; payloadTypes: readonly string[] } | null;
  /** `tools` or `xml`: the listener's own `reply_format`, else its provider's. */
  replyFormat(listener: ListenerConfig): ReplyFormat;
  /** Tools of the named MCP servers. */
  mcpTools(servers: readonly string[]): Promise<McpTool[]>;
  /** Runs one MCP tool call (timed and recorded); a failure comes back as an error result, an abort as ABORTED. */
  callMcp(call: { tool: McpTool; arguments: Record<string, unknown>; signal: AbortSignal; llmCallId: string; threadId: string; messageId: string; agent: string }): Promise<McpToolResult>;
  /** The code tools (`tools:`) of the named agent, as the running configuration loaded them. */
  codeTools(agent: string): readonly CodeTool[];
  /** Runs one code tool call (validated, timed and recorded); a failure comes back as an error result, an abort as ABORTED. */
  callCode(call: {
    tool: CodeTool;
    type: PayloadType;
    arguments: Record<string, unknown>;
    signal: AbortSignal;
    llmCallId: string;
    threadId: string;
    messageId: string;
    agent: string;
    log: HandlerLogger;
  }): Promise<McpToolResult>;
  /** The approval state a delivery stopped with (its decision, once decided), or null. */
  approval(messageId: string): Promise<ApprovalState | null>;
}
