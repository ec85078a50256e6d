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
