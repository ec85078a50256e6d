import { InboxClosed, InboxCounts, InboxItem } from './inbox.js';
import { Type, type Static } from 'typebox';
import { AgentInfo, AgentState } from './agent.js';
import { MessageRecord } from './message.js';
import { JournalStats, OrganismStatus } from './organism.js';
import { Nullable, NullableString, NullableTimestamp, Timestamp } from './common.js';
import { ThreadErasureView, ThreadHoldView, ThreadInfo } from './thread.js';
import { UsageTotals } from './usage.js';
import { WorkerInfo } from './worker.js';

/**
 * The WebSocket frames of /ws and /ws/messages (docs/websocket.md), as schemas: the typed
 * client derives its frame types from them and the tests check real frames against them.
 */

const head = <E extends string>(event: E) => ({
  event: Type.Literal(event),
  seq: Type.Integer({ minimum: 1, description: 'Increases across the whole server process' }),
  timestamp: Timestamp,
});

/** A command's reply echoes the command's `id` when it carried one. */
const replyId = { id: Type.Optional(Type.Union([Type.String(), Type.Number()])) };

export const WsFilter = Type.Object({
  threads: Type.Array(Type.String()),
  agents: Type.Array(Type.String()),
  payloadTypes: Type.Array(Type.String()),
  events: Type.Array(Type.String()),
});

export const SnapshotOrganism = Type.Object({
  name: Type.String(),
  status: OrganismStatus,
  version: NullableString,
  startedAt: NullableTimestamp,
  uptimeSeconds: Type.Number(),
  agentCount: Type.Integer(),
  activeThreads: Type.Integer(),
  totalMessages: Type.Integer({ description: 'Messages since this process started' }),
});

/**
 * The first frame of a connection. On /ws a full snapshot (organism, agents, threads, usage,
 * journal); on /ws/messages the bootId and filter; after a successful resume `resumed: true`
 * with the replayed count. `resync: true` means missed frames are lost: reload your views.
 */
export const ConnectedFrame = Type.Object({
  ...head('connected'),
  bootId: Type.String(),
  organism: Type.Optional(SnapshotOrganism),
  agents: Type.Optional(Type.Array(AgentInfo)),
  threads: Type.Optional(Type.Array(ThreadInfo)),
  usage: Type.Optional(UsageTotals),
  journal: Type.Optional(JournalStats),
  inbox: Type.Optional(InboxCounts),
  filter: Type.Optional(WsFilter),
  resync: Type.Optional(Type.Literal(true)),
  resumed: Type.Optional(Type.Literal(true)),
  since: Type.Optional(Type.Integer()),
  replayed: Type.Optional(Type.Integer()),
});

export const MessageFrame = Type.Object({ ...head('message'), message: MessageRecord });

export const AgentStateFrame = Type.Object({ ...head('agent_state'), agent: Type.String(), state: AgentState, currentThread: NullableString });

export const ThreadCreatedFrame = Type.Object({ ...head('thread_created'), thread: ThreadInfo });
export const ThreadUpdatedFrame = Type.Object({ ...head('thread_updated'), thread: ThreadInfo });

export const UsageCall = Type.Object({
  id: Type.String(),
  timestamp: Timestamp,
  threadId: Type.String(),
  agentId: Type.String(),
  messageId: NullableString,
  model: Type.String(),
  provider: Type.String(),
  promptTokens: Type.Integer(),
  completionTokens: Type.Integer(),
  totalTokens: Type.Integer(),
  cacheReadTokens: Nullable(Type.Integer()),
  cacheWriteTokens: Nullable(Type.Integer()),
  reasoningTokens: Nullable(Type.Integer()),
  providerLatencyMs: Type.Number(),
  totalLatencyMs: Type.Number(),
  cost: Nullable(Type.Number({ description: 'USD; null when the model has no price' })),
  metadata: Type.Object({}, { additionalProperties: Type.String() }),
});

export const UsageFrame = Type.Object({ ...head('usage'), usage: UsageCall });

export const BudgetWarningFrame = Type.Object({
  ...head('budget_warning'),
  threadId: Type.String(),
  agent: Type.String(),
  severity: Type.Enum(['warning', 'critical', 'final']),
  threshold: Type.Number(),
  percentUsed: Type.Number(),
  tokensUsed: Type.Integer(),
  tokensRemaining: Type.Integer(),
  maxTokens: Type.Integer(),
});

export const PeerDeniedFrame = Type.Object({
  ...head('peer_denied'),
  from: Type.String(),
  to: Type.String(),
  threadId: Type.String(),
  messageId: Type.String(),
  reason: Type.String(),
});

export const ReloadFrame = Type.Object({
  ...head('reload'),
  success: Type.Boolean(),
  added: Type.Array(Type.String()),
  removed: Type.Array(Type.String()),
  updated: Type.Array(Type.String()),
  updatedFields: Type.Record(Type.String(), Type.Array(Type.String())),
  changed: Type.Array(Type.String()),
  restartRequired: Type.Array(Type.String()),
  error: NullableString,
});

export const OrganismStatusFrame = Type.Object({ ...head('organism_status'), status: OrganismStatus });

export const JournalFailedFrame = Type.Object({
  ...head('journal_failed'),
  message: MessageRecord,
  reason: Type.String(),
  error: NullableString,
});

/** Text a model is writing as it streams in; live only (never journaled, never replayed). */
export const LlmDeltaFrame = Type.Object({
  ...head('llm_delta'),
  threadId: Type.String(),
  messageId: Type.String(),
  agent: Type.String(),
  callId: Type.String({ description: 'The recorded LLM call (GET /journal/{messageId}/llm-calls)' }),
  text: Type.String(),
});

/** A process of the organism came, stopped, was lost (silent past its lease) or is back. */
export const WorkerFrame = Type.Object({
  ...head('worker'),
  change: Type.Enum(['joined', 'stopped', 'lost', 'back']),
  worker: WorkerInfo,
});

/** Deliveries another process held were taken back (its lease expired): PENDING again, or FAILED max_attempts. */
export const DeliveriesTakenBackFrame = Type.Object({
  ...head('deliveries_taken_back'),
  worker: Nullable(Type.String({ description: 'The id of the process that held them (null: nobody held them)' })),
  name: NullableString,
  retried: Type.Integer({ description: 'Back to PENDING with attempt + 1' }),
  failed: Type.Integer({ description: 'FAILED max_attempts (out of attempts)' }),
});

/** An ask started to wait for a person (issue 25). */
export const InboxOpenedFrame = Type.Object({ ...head('inbox_opened'), item: InboxItem });

/** An ask was answered, rejected, expired, or closed by its thread's kill. */
export const InboxClosedFrame = Type.Object({ ...head('inbox_closed'), ...InboxClosed.properties });

/** A thread was held (issue 30): by an operator, or by the loop breaker. */
export const ThreadHeldFrame = Type.Object({ ...head('thread_held'), threadId: Type.String(), hold: ThreadHoldView });
/** A held thread was resumed. */
export const ThreadResumedFrame = Type.Object({ ...head('thread_resumed'), threadId: Type.String(), hold: ThreadHoldView });
/** The loop breaker found a runaway thread; a thread_held frame follows. */
export const LoopDetectedFrame = Type.Object({
  ...head('loop_detected'),
  threadId: Type.String(),
  rule: Type.Enum(['repeat', 'cycle', 'velocity'], {
    description: 'repeat: one edge carried one payload too often; cycle: a cycle of edges repeated without a new payload; velocity: tokens per minute',
  }),
  edges: Type.Array(Type.Object({ from: Type.String(), to: Type.String() }), { description: 'The edge (repeat), the cycle (cycle), or the delivery edge that spent (velocity)' }),
  evidence: Type.Record(Type.String(), Type.Unknown(), { description: 'Counts, limits, the payload hash, tokens: what the rule saw' }),
  messageId: Type.String({ description: 'The delivery whose outcome tripped it' }),
});
/** A thread's recorded text was erased (DELETE /threads/{id}). */
export const ThreadErasedFrame = Type.Object({ ...head('thread_erased'), threadId: Type.String(), erasure: ThreadErasureView });

export const SubscribedFrame = Type.Object({ ...head('subscribed'), ...replyId, filter: WsFilter });
export const InjectedFrame = Type.Object({ ...head('injected'), ...replyId, threadId: Type.String(), messageId: Type.String() });
export const PongFrame = Type.Object({ ...head('pong'), ...replyId });
export const ErrorFrame = Type.Object({
  ...head('error'),
  ...replyId,
  error: Type.String(),
  cmd: Type.Optional(Type.Unknown({ description: 'The command that failed, when known' })),
  errors: Type.Optional(Type.Unknown()),
});

export const ServerFrame = Type.Union([
  ConnectedFrame,
  MessageFrame,
  AgentStateFrame,
  ThreadCreatedFrame,
  ThreadUpdatedFrame,
  UsageFrame,
  BudgetWarningFrame,
  PeerDeniedFrame,
  ReloadFrame,
  OrganismStatusFrame,
  JournalFailedFrame,
  LlmDeltaFrame,
  WorkerFrame,
  DeliveriesTakenBackFrame,
  InboxOpenedFrame,
  InboxClosedFrame,
  ThreadHeldFrame,
  ThreadResumedFrame,
  LoopDetectedFrame,
  ThreadErasedFrame,
  SubscribedFrame,
  InjectedFrame,
  PongFrame,
  ErrorFrame,
]);
export type ServerFrame = Static<typeof ServerFrame>;
