import { Type } from 'typebox';
import { ThreadUsage } from './usage.js';
import { Name, NullableString, PageFields, PageQuery, SuccessFlag, Timestamp } from './common.js';
import { MessageRecord } from './message.js';
import { FindFields, SearchTruncated } from './find.js';

/** waiting: an ask waits for a person; held: an operator or the loop breaker holds it (extensions of the spec). */
export const ThreadStatus = Type.Enum(['active', 'waiting', 'held', 'completed', 'error', 'killed']);

/** A thread's hold (issue 30): held now, or resumed (kept for the loop breaker's baseline and raised limits). */
export const ThreadHoldView = Type.Object(
  {
    held: Type.Boolean({ description: 'Held now (false: resumed)' }),
    rule: Type.Enum(['operator', 'repeat', 'cycle', 'velocity'], { description: "operator: an operator's pause; repeat, cycle, velocity: the loop breaker's rule" }),
    reason: Type.String({ description: 'Why, in words' }),
    evidence: Type.Unknown({ description: "The loop breaker's evidence (edges, counts, payload hashes, tokens); null for an operator's pause" }),
    by: Type.String({ description: "Who held it: a token's name, or loop_guard" }),
    heldAt: Timestamp,
    resumedAt: Type.Union([Timestamp, Type.Null()]),
    resumedBy: NullableString,
    limitFactor: Type.Integer({ minimum: 1, description: "The loop breaker's limits for this thread are multiplied by this (a resume with raiseLimits doubles it)" }),
  },
  { title: 'ThreadHold' },
);

/** What an erasure replaced by tombstones (issue 30). */
export const ThreadErasureView = Type.Object(
  {
    threadId: Type.String(),
    erasedBy: Type.String({ description: "The operator token's name" }),
    erasedAt: Timestamp,
    messages: Type.Integer({ description: 'Journal entries whose payload, error, ask note and approval became tombstones' }),
    llmCalls: Type.Integer({ description: 'Recorded LLM calls whose prompts and answers became tombstones' }),
    toolCalls: Type.Integer({ description: 'Recorded tool calls whose arguments and results became tombstones' }),
    events: Type.Integer({ description: "Recorded event bodies removed (a cluster's relay)" }),
  },
  { title: 'ThreadErasure' },
);

export const ForkedFrom = Type.Object(
  { threadId: Type.String(), messageId: Type.String({ description: 'The fork ran on from this message of the source thread' }) },
  { title: 'ForkedFrom' },
);

export const ThreadInfo = Type.Object(
  {
    id: Type.String(),
    status: ThreadStatus,
    participants: Type.Array(Type.String()),
    messageCount: Type.Integer(),
    createdAt: Timestamp,
    lastActivity: Timestamp,
    error: NullableString,
    hold: Type.Optional(Type.Union([ThreadHoldView, Type.Null()], { description: "The thread's hold: present while held (GET /threads/{id}: also once resumed); null: never held" })),
    forkedFrom: Type.Union([ForkedFrom, Type.Null()], { description: 'The thread and message this thread was forked from (time travel); null: not a fork' }),
    forkConfig: Type.Union([Type.String(), Type.Null()], {
      description: "The organism.yaml this fork runs under (the fork's configPath, absolute); null: the running organism's",
    }),
  },
  { title: 'ThreadInfo' },
);

export const ThreadDetail = Type.Object(
  {
    ...ThreadInfo.properties,
    messages: Type.Array(MessageRecord, { description: 'Oldest first; the latest 100' }),
    usage: ThreadUsage,
    erasure: Type.Optional(Type.Union([ThreadErasureView, Type.Null()], { description: 'When, by whom and what of the thread was erased; null: never' })),
  },
  { title: 'ThreadDetail' },
);

export const ThreadListResponse = Type.Object({ threads: Type.Array(ThreadInfo), ...PageFields, searchTruncated: SearchTruncated }, { title: 'ThreadListResponse' });

/** `status` is a plain string here: the spec answers a bad value with 400 and its own text. */
export const ThreadQuery = Type.Object({
  status: Type.Optional(Type.String({ description: 'active, waiting, held, completed, error or killed' })),
  agent: Type.Optional(Type.String({ maxLength: 256, description: 'Participant' })),
  startTime: Type.Optional(Type.String({ maxLength: 64, description: 'Threads active at or after this time: last activity not earlier (ISO 8601)' })),
  endTime: Type.Optional(Type.String({ maxLength: 64, description: 'Threads created before this time (ISO 8601)' })),
  text: FindFields.text,
  ...PageQuery,
});

export const ThreadParams = Type.Object({ threadId: Name });
export const ThreadPageQuery = Type.Object({ ...PageQuery });

export const HoldResponse = Type.Object({ success: SuccessFlag, threadId: Type.String(), status: ThreadStatus, hold: Type.Union([ThreadHoldView, Type.Null()]) }, { title: 'HoldResponse' });
export const ResumeRequest = Type.Object(
  {
    raiseLimits: Type.Optional(Type.Boolean({ description: "Double the loop breaker's limits for this thread (each resume with it doubles them again)" })),
  },
  { additionalProperties: false, title: 'ResumeRequest' },
);
export const PauseRequest = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 1000, description: "Why (shown with the thread's held status)" })) },
  { additionalProperties: false, title: 'PauseRequest' },
);

export const EraseResponse = Type.Object({ success: SuccessFlag, threadId: Type.String(), erasure: ThreadErasureView }, { title: 'EraseResponse' });

export const KillResponse = Type.Object({ success: SuccessFlag, threadId: Type.String() }, { title: 'KillResponse' });

export const ForkRequest = Type.Object(
  {
    atMessageId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'The message the fork runs on from; the messages before it are its history (default: the first message)' }),
    ),
    configPath: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          "The organism.yaml the fork runs under, checked like a reload (only the fork uses it; the running organism is unchanged). Relative to the running organism.yaml's directory, which it must lie in. It may change and remove listeners, not add any. Omitted: the running configuration",
      }),
    ),
    dryRun: Type.Optional(Type.Boolean({ description: 'Check and answer what the fork would be, creating nothing' })),
  },
  { additionalProperties: false, title: 'ForkRequest' },
);

export const ForkResponse = Type.Object(
  {
    threadId: Type.Union([Type.String(), Type.Null()], { description: 'The new thread; null for a dry run' }),
    forkedFrom: ForkedFrom,
    replay: Type.Enum(['record', 'live'], {
      description:
        "record: LLM calls are answered from the source thread's record while their requests match; live: the source's answers were not recorded (llm.record metadata or off), every call goes to a provider",
    }),
    liveReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the fork runs live (replay live)' }),
    history: Type.Integer({ description: "Messages of the source copied as the fork's history (those before atMessageId)" }),
    dryRun: Type.Boolean(),
    config: Type.Union(
      [
        Type.Object(
          {
            path: Type.String({ description: 'The absolute path of the organism.yaml the fork runs under' }),
            hash: Type.String({ description: 'Its fingerprint when the fork was made' }),
            updated: Type.Array(Type.String(), { description: 'Listeners whose configuration or handler differ from the running ones' }),
            removed: Type.Array(Type.String(), { description: 'Listeners the fork runs without (messages to them are refused in the fork)' }),
            changed: Type.Array(Type.String(), { description: 'Organism-wide keys that differ' }),
          },
          { title: 'ForkConfig' },
        ),
        Type.Null(),
      ],
      { description: 'The organism.yaml the fork runs under (configPath); null: the running one' },
    ),
  },
  { title: 'ForkResponse' },
);

export const CompareParams = Type.Object({ threadId: Name, otherId: Name });

const ComparedMessage = Type.Object({ id: Type.String(), from: Type.String(), to: Type.String(), payloadType: Type.String(), state: Type.String() });
const CalledBy = Type.Object({ callId: Type.String(), agent: Type.String(), requestHash: Type.Union([Type.String(), Type.Null()]) });
const ComparedTool = Type.Object({
  id: Type.String(),
  agent: Type.String(),
  kind: Type.Enum(['mcp', 'code']),
  server: Type.String(),
  tool: Type.String(),
  arguments: Type.Unknown({ description: 'null when llm.record is metadata' }),
});
const SideTotals = Type.Object({
  threadId: Type.String(),
  status: ThreadStatus,
  messages: Type.Integer(),
  llmCalls: Type.Integer(),
  replayedCalls: Type.Integer({ description: "Calls answered from the record (a fork's replay)" }),
  tokens: Type.Object({ prompt: Type.Integer(), completion: Type.Integer(), total: Type.Integer() }, { description: "Every call's tokens, replayed ones as originally used" }),
  chargedTokens: Type.Integer({ description: 'Tokens of the calls a provider answered' }),
  cost: Type.Number(),
  llmLatencyMs: Type.Number({ description: 'Time spent in LLM calls' }),
  durationMs: Type.Number({ description: "From the thread's creation to its last activity" }),
});

export const CompareResponse = Type.Object(
  {
    a: SideTotals,
    b: SideTotals,
    messages: Type.Array(
      Type.Object({
        index: Type.Integer(),
        a: Type.Union([ComparedMessage, Type.Null()], { description: 'null past the end of thread a' }),
        b: Type.Union([ComparedMessage, Type.Null()]),
        same: Type.Boolean({ description: 'Same sender, receiver, payload type and payload' }),
        payloadDiff: Type.Array(Type.Object({ path: Type.String(), a: Type.Optional(Type.Unknown()), b: Type.Optional(Type.Unknown()) }), {
          description: 'Where the payloads differ (JSON paths; a side absent: the field is missing there); at most 100',
        }),
      }),
      { description: "Both threads' messages, oldest first, position by position" },
    ),
    firstDivergence: Type.Union([Type.Integer(), Type.Null()], { description: 'The index of the first position whose messages differ; null: the same messages' }),
    firstCallDivergence: Type.Union(
      [
        Type.Object({
          index: Type.Integer(),
          agent: Type.String({ description: 'The agent whose call differs first' }),
          a: Type.Union([CalledBy, Type.Null()]),
          b: Type.Union([CalledBy, Type.Null()]),
        }),
        Type.Null(),
      ],
      { description: 'The first LLM call (in order of the calls that answered) whose agent or request hash differs; null: the same requests' },
    ),
    toolCallsOnlyIn: Type.Object({ a: Type.Array(ComparedTool), b: Type.Array(ComparedTool) }, { description: 'Tool executions (code and MCP) that only one thread made' }),
  },
  { title: 'ThreadComparison' },
);

export const CassetteResponse = Type.Object(
  {
    format: Type.Literal('organism.cassette'),
    version: Type.Integer({ description: 'The cassette format version (1)' }),
    organism: Type.String(),
    exportedAt: Type.Number({ description: 'ms since the epoch' }),
    thread: Type.Object({
      id: Type.String(),
      status: Type.String(),
      createdAt: Type.Number(),
      lastActivity: Type.Number(),
      forkedFrom: Type.Union([ForkedFrom, Type.Null()]),
    }),
    messages: Type.Array(
      Type.Object({
        id: Type.String(),
        from: Type.String(),
        to: Type.String(),
        payloadType: Type.String(),
        payload: Type.Record(Type.String(), Type.Unknown()),
        parentId: Type.Union([Type.String(), Type.Null()]),
        hops: Type.Integer(),
        timestamp: Type.Number(),
        state: Type.String(),
      }),
      { description: 'Oldest first' },
    ),
    llmCalls: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'The recorded LLM calls as stored (see LlmCall; times in ms)' }),
    toolCalls: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'The recorded code and MCP tool calls as stored' }),
  },
  { title: 'Cassette' },
);
