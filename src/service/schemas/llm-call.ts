import { Type } from 'typebox';
import { Name, Nullable, NullableString, PageFields, PageQuery, Timestamp } from './common.js';

const NullableNumber = Nullable(Type.Number());
const NullableInteger = Nullable(Type.Integer());

export const TokenUsageInfo = Type.Object(
  {
    promptTokens: Type.Integer(),
    completionTokens: Type.Integer(),
    totalTokens: Type.Integer(),
    cacheReadTokens: NullableInteger,
    cacheWriteTokens: NullableInteger,
    reasoningTokens: NullableInteger,
  },
  { title: 'TokenUsage' },
);

export const ToolExecutionInfo = Type.Object(
  {
    id: Type.String(),
    kind: Type.Enum(['mcp', 'code'], { description: "mcp: a tool of an MCP server; code: a function of the agent's tools (organism.yaml)" }),
    server: Type.String({ description: "The MCP server (mcp_servers), or the code tool's module (./tools.ts)" }),
    tool: Type.String({ description: "The MCP server's name of the tool, or the code tool's name" }),
    arguments: Type.Unknown({ description: 'As the model gave them; null when llm.record is metadata' }),
    result: Nullable(Type.String({ description: "The tool's text result; null when llm.record is metadata or it failed" })),
    isError: Type.Boolean(),
    error: NullableString,
    startedAt: Timestamp,
    durationMs: Type.Number(),
    replayed: Type.Boolean({ description: "A fork's tool call whose result was reused from its source thread's record (listener replay: recorded): the tool did not run" }),
  },
  { title: 'ToolExecution' },
);

export const LlmCallInfo = Type.Object(
  {
    id: Type.String(),
    threadId: Type.String(),
    messageId: NullableString,
    agent: Type.String(),
    provider: Type.String(),
    model: Type.String({ description: 'The model asked for' }),
    responseModel: Nullable(Type.String({ description: 'The model the provider reported' })),
    attempt: Type.Integer({ description: '1-based across retries and failover' }),
    repair: Type.Boolean({ description: 'The call asked the model to repair an invalid answer' }),
    startedAt: Timestamp,
    latencyMs: Type.Number(),
    request: Type.Unknown({ description: 'The request body as sent (never headers); null when llm.record is metadata' }),
    tools: Type.Array(Type.String(), { description: 'Names of the tools offered' }),
    response: Nullable(
      Type.Object({
        text: Nullable(Type.String({ description: 'null when llm.record is metadata' })),
        toolCalls: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), arguments: Nullable(Type.String()) })),
        finishReason: NullableString,
      }),
    ),
    usage: Nullable(TokenUsageInfo),
    maxOutputTokens: Nullable(Type.Integer({ description: 'The output cap sent with the request (max_tokens); null for calls recorded by earlier versions' })),
    overOutputCap: Type.Boolean({
      description: 'The provider reported more completion tokens than maxOutputTokens: billed as reported, flagged here (and counted in organism_llm_output_over_cap_total)',
    }),
    cost: NullableNumber,
    error: Nullable(Type.String({ description: 'Why this attempt failed (provider down, HTTP error, timeout, abort, a guardrail); null when it answered' })),
    guard: Nullable(
      Type.Object(
        {
          name: Type.String({ description: 'The guard (its `name`, export name, or built-in kind)' }),
          stage: Type.Union([Type.Literal('input'), Type.Literal('output')], {
            description: 'input: refused before the provider call (nothing sent, no tokens); output: the answer was refused',
          }),
          reason: Type.String({ description: "The guard's reason" }),
        },
        { description: 'The guardrail that stopped this call (the delivery failed with reason `guardrail`); null when none did' },
      ),
    ),
    record: Type.Union([Type.Literal('full'), Type.Literal('metadata')], {
      description: 'What llm.record kept: full, or metadata (no prompt, answer text, tool arguments or results)',
    }),
    toolExecutions: Type.Array(ToolExecutionInfo, { description: 'The tool calls (MCP and code) this call requested, in order' }),
    requestHash: Nullable(Type.String({ description: 'sha256 of the request as it was sent (before llm.record dropped anything); null for calls recorded by earlier versions' })),
    replayed: Type.Boolean({ description: "A fork's call answered from the record of its source thread: no provider called, zero cost (usage is the original call's)" }),
    replayOf: Nullable(Type.String({ description: 'The recorded call that answered it (replayed calls)' })),
  },
  { title: 'LlmCall' },
);

export const DeliveryLlmCallsResponse = Type.Object(
  { messageId: Type.String(), calls: Type.Array(LlmCallInfo, { description: 'Oldest first' }), count: Type.Integer() },
  { title: 'DeliveryLlmCallsResponse' },
);

export const ThreadLlmCallsResponse = Type.Object(
  { threadId: Type.String(), calls: Type.Array(LlmCallInfo, { description: 'Oldest first' }), ...PageFields },
  { title: 'ThreadLlmCallsResponse' },
);

export const AgentLlmCallsResponse = Type.Object(
  { agent: Type.String(), calls: Type.Array(LlmCallInfo, { description: 'Newest first' }), ...PageFields },
  { title: 'AgentLlmCallsResponse' },
);

export const LlmCallPageQuery = Type.Object({ ...PageQuery });
export const MessageIdParams = Type.Object({ messageId: Name });
