import { Type } from 'typebox';
import { Nullable, NullableString, NullableTimestamp, Timestamp } from './common.js';
import { EarlierAttemptInfo } from './journal.js';
import { DeliveryState } from './message.js';
import { ThreadStatus } from './thread.js';

/** Timings only: no payload, prompt, answer, tool argument or result (viewers may read it). */
export const WaterfallDelivery = Type.Object(
  {
    messageId: Type.String(),
    from: Type.String(),
    to: Type.String(),
    payloadType: Type.String(),
    state: DeliveryState,
    attempts: Type.Integer({ description: 'Times dispatched' }),
    createdAt: Timestamp,
    dispatchedAt: Nullable(Type.String({ format: 'date-time', description: 'The latest attempt; null while it waits' })),
    ackedAt: NullableTimestamp,
    failedAt: NullableTimestamp,
    failureReason: NullableString,
    error: NullableString,
    earlierAttempts: Type.Array(EarlierAttemptInfo, { description: 'Attempts before the latest one, oldest first' }),
    nextAttemptAt: Nullable(
      Type.String({ format: 'date-time', description: "A PENDING retry waiting out its listener's backoff (`retry:`): not delivered before this time; null otherwise" }),
    ),
  },
  { title: 'WaterfallDelivery' },
);

export const WaterfallToolExecution = Type.Object(
  {
    id: Type.String(),
    kind: Type.Enum(['mcp', 'code'], { description: "mcp: a tool of an MCP server; code: a function of the agent's tools (organism.yaml)" }),
    server: Type.String({ description: "The MCP server, or the code tool's module" }),
    tool: Type.String(),
    startedAt: Timestamp,
    durationMs: Type.Number(),
    isError: Type.Boolean(),
    error: NullableString,
  },
  { title: 'WaterfallToolExecution' },
);

export const WaterfallCall = Type.Object(
  {
    id: Type.String(),
    messageId: NullableString,
    agent: Type.String(),
    provider: Type.String(),
    model: Type.String(),
    attempt: Type.Integer({ description: '1-based across retries and failover within one call of the agent' }),
    repair: Type.Boolean(),
    startedAt: Timestamp,
    latencyMs: Type.Number(),
    usage: Nullable(Type.Object({ promptTokens: Type.Integer(), completionTokens: Type.Integer(), totalTokens: Type.Integer() })),
    cost: Nullable(Type.Number()),
    finishReason: NullableString,
    error: NullableString,
    toolExecutions: Type.Array(WaterfallToolExecution, { description: 'The tool calls (MCP and code) this call requested, in order' }),
  },
  { title: 'WaterfallCall' },
);

export const WaterfallResponse = Type.Object(
  {
    threadId: Type.String(),
    status: ThreadStatus,
    now: Type.String({ format: 'date-time', description: "The server's clock: where a delivery still waiting or running ends" }),
    deliveries: Type.Array(WaterfallDelivery, { description: 'Oldest first' }),
    calls: Type.Array(WaterfallCall, { description: 'Recorded LLM calls (llm.record), oldest first' }),
    record: Type.Union([Type.Literal('full'), Type.Literal('metadata'), Type.Literal('off')], { description: 'llm.record now: with off, no call is recorded' }),
    truncated: Type.Boolean({ description: 'The thread has more deliveries (500) or calls (1000) than one answer holds; the first ones are given' }),
  },
  { title: 'WaterfallResponse' },
);
