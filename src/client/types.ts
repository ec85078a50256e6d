/**
 * Wire types of the control service, derived from the TypeBox schemas that validate its
 * requests and serialize its answers (src/service/schemas): type-only imports, so the client
 * carries no schema code at run time.
 */
import type { Static } from 'typebox';
import type { AgentConfig, AgentInfo, AgentListResponse, AgentSchemaResponse, PauseResponse, ResumeResponse } from '../service/schemas/agent.js';
import type { CapabilityDetail, CapabilityListResponse } from '../service/schemas/capability.js';
import type { ErrorBody } from '../service/schemas/error.js';
import type * as F from '../service/schemas/frames.js';
import type { HealthResponse } from '../service/schemas/health.js';
import type { BulkKillRequest, BulkKillResponse, BulkRedeliverRequest, BulkRedeliverResponse } from '../service/schemas/find.js';
import type { WorkerListResponse } from '../service/schemas/worker.js';
import type {
  ScheduleInfo,
  ScheduleListResponse,
  ScheduleQuery,
  ScheduleRequest,
  ScheduleTickInfo,
  WebhookDeliveryInfo,
  WebhookListResponse,
  WebhookQuery,
} from '../service/schemas/interop.js';
import type {
  AnswerRequest,
  AnswerResponse,
  ApproveRequest,
  InboxClosed as InboxClosedSchema,
  InboxCounts as InboxCountsSchema,
  InboxItem as InboxItemSchema,
  InboxListResponse,
  InboxQuery,
  RejectRequest,
} from '../service/schemas/inbox.js';
import type { InjectRequest, InjectResponse } from '../service/schemas/inject.js';
import type { JournalEntryInfo, JournalListResponse, JournalQuery, RedeliverResponse } from '../service/schemas/journal.js';
import type { WaterfallResponse } from '../service/schemas/waterfall.js';
import type { AgentLlmCallsResponse, DeliveryLlmCallsResponse, LlmCallInfo, ThreadLlmCallsResponse } from '../service/schemas/llm-call.js';
import type { MessageListResponse, MessageQuery, MessageRecord } from '../service/schemas/message.js';
import type { EdgeTrafficResponse, JournalStats, OrganismInfo, ReloadQuery, ReloadResponse, RestartResponse, StopResponse } from '../service/schemas/organism.js';
import type { WhoAmI as WhoAmIResponse } from '../service/schemas/whoami.js';
import type {
  CassetteResponse,
  CompareResponse,
  EraseResponse,
  ForkRequest,
  ForkResponse,
  HoldResponse,
  KillResponse,
  PauseRequest,
  ResumeRequest,
  ThreadDetail,
  ThreadErasureView,
  ThreadHoldView,
  ThreadInfo,
  ThreadListResponse,
  ThreadPageQuery,
  ThreadQuery,
} from '../service/schemas/thread.js';
import type {
  AgentUsageInfo,
  BillingQuery,
  BillingResponse,
  DailyQuery,
  DailyResponse,
  ModelUsageInfo,
  ResetResponse,
  SetBudgetRequest,
  ThreadBudgetInfo,
  ThreadBudgetListQuery,
  ThreadBudgetListResponse,
  UsageHistoryQuery,
  UsageHistoryResponse,
  UsageResponse,
} from '../service/schemas/usage.js';

/** The answer of `GET /health`. */
export type Health = Static<typeof HealthResponse>;
/** The answer of `GET /api/v1/organism`. */
export type Organism = Static<typeof OrganismInfo>;
/** The answer of `GET /api/v1/organism/edges`. */
export type EdgeTraffic = Static<typeof EdgeTrafficResponse>;
/** The answer of `GET /api/v1/whoami`. */
export type WhoAmI = Static<typeof WhoAmIResponse>;
/** The answer of `GET /api/v1/journal/stats`. */
export type Journal = Static<typeof JournalStats>;
/** One recorded LLM call (in `DeliveryLlmCalls`, `ThreadLlmCalls` and `AgentLlmCalls`). */
export type LlmCall = Static<typeof LlmCallInfo>;
/** The answer of `GET /api/v1/journal/{messageId}/llm-calls`. */
export type DeliveryLlmCalls = Static<typeof DeliveryLlmCallsResponse>;
/** The answer of `GET /api/v1/threads/{threadId}/llm-calls`. */
export type ThreadLlmCalls = Static<typeof ThreadLlmCallsResponse>;
/** The answer of `GET /api/v1/threads/{threadId}/waterfall`. */
export type Waterfall = Static<typeof WaterfallResponse>;
/** The answer of `GET /api/v1/agents/{name}/llm-calls`. */
export type AgentLlmCalls = Static<typeof AgentLlmCallsResponse>;
/** The answer of `POST /api/v1/organism/reload`. */
export type Reload = Static<typeof ReloadResponse>;
/** The query of `POST /api/v1/organism/reload`. */
export type ReloadOptions = Static<typeof ReloadQuery>;
/** The answer of `POST /api/v1/organism/stop`. */
export type Stop = Static<typeof StopResponse>;
/** The answer of `POST /api/v1/organism/restart`. */
export type Restart = Static<typeof RestartResponse>;
/** The answer of `GET /api/v1/capabilities`. */
export type CapabilityList = Static<typeof CapabilityListResponse>;
/** The answer of `GET /api/v1/capabilities/{name}`. */
export type Capability = Static<typeof CapabilityDetail>;
/** The answer of `GET /api/v1/agents/{name}`. */
export type Agent = Static<typeof AgentInfo>;
/** The answer of `GET /api/v1/agents`. */
export type AgentList = Static<typeof AgentListResponse>;
/** The processes of a clustered (PostgreSQL) organism; an embedded one answers shared: false. */
export type WorkerList = Static<typeof WorkerListResponse>;
/** A schedule (`GET /api/v1/schedules/{name}`), with its latest ticks. */
export type Schedule = Static<typeof ScheduleInfo>;
/** One tick of a schedule: fired (its thread), skipped, or failed. */
export type ScheduleTick = Static<typeof ScheduleTickInfo>;
/** The answer of `GET /api/v1/schedules`. */
export type ScheduleList = Static<typeof ScheduleListResponse>;
/** The query of `GET /api/v1/schedules`: how many of each schedule's latest ticks to list. */
export type ScheduleListQuery = Static<typeof ScheduleQuery>;
/** The body of `POST /api/v1/schedules`: exactly one of `cron` (with `timezone`) and `every`. */
export type ScheduleInput = Static<typeof ScheduleRequest>;
/** The answer of `GET /api/v1/webhooks`. */
export type WebhookList = Static<typeof WebhookListResponse>;
/** The query of `GET /api/v1/webhooks`: one webhook, one state, how many deliveries. */
export type WebhookListQuery = Static<typeof WebhookQuery>;
/** One journaled webhook delivery. */
export type WebhookDelivery = Static<typeof WebhookDeliveryInfo>;
/** The answer of `GET /api/v1/agents/{name}/config`. */
export type AgentSettings = Static<typeof AgentConfig>;
/** The answer of `GET /api/v1/agents/{name}/schema`. */
export type AgentSchema = Static<typeof AgentSchemaResponse>;
/** The answer of `POST /api/v1/agents/{name}/pause`. */
export type Pause = Static<typeof PauseResponse>;
/** The answer of `POST /api/v1/agents/{name}/resume`. */
export type Resume = Static<typeof ResumeResponse>;
/** A thread as the API shows it (in `ThreadList` and `thread_created`/`thread_updated` frames). */
export type Thread = Static<typeof ThreadInfo>;
/** The answer of `GET /api/v1/threads/{threadId}`. */
export type ThreadWithMessages = Static<typeof ThreadDetail>;
/** The answer of `GET /api/v1/threads`. */
export type ThreadList = Static<typeof ThreadListResponse>;
/** The query of `GET /api/v1/threads`. */
export type ThreadListQuery = Static<typeof ThreadQuery>;
/** The query of `GET /api/v1/threads/{threadId}/messages`. */
export type PageQuery = Static<typeof ThreadPageQuery>;
/** The answer of `POST /api/v1/threads/{threadId}/kill`. */
export type Kill = Static<typeof KillResponse>;
/** A thread's hold (issue 30): held now, or resumed. */
export type ThreadHold = Static<typeof ThreadHoldView>;
/** The body of `POST /api/v1/threads/{threadId}/pause`. */
export type ThreadPause = Static<typeof PauseRequest>;
/** The body of `POST /api/v1/threads/{threadId}/resume`. */
export type ThreadResume = Static<typeof ResumeRequest>;
/** The answer of `POST /api/v1/threads/{threadId}/pause` and `/resume`. */
export type ThreadHeld = Static<typeof HoldResponse>;
/** What an erasure replaced by tombstones. */
export type ThreadErasure = Static<typeof ThreadErasureView>;
/** The answer of `DELETE /api/v1/threads/{threadId}`. */
export type ThreadErased = Static<typeof EraseResponse>;
/** The body of `POST /api/v1/threads/{threadId}/fork` (time travel). */
export type Fork = Static<typeof ForkRequest>;
/** The answer of `POST /api/v1/threads/{threadId}/fork`: the new thread, what it was forked from, and whether it replays from the record. */
export type Forked = Static<typeof ForkResponse>;
/** The answer of `GET /api/v1/threads/{a}/compare/{b}`: both threads aligned message by message. */
export type ThreadComparison = Static<typeof CompareResponse>;
/** The answer of `GET /api/v1/threads/{threadId}/export`: the thread as a cassette (versioned JSON of its messages and recorded calls). */
export type Cassette = Static<typeof CassetteResponse>;
/** A message as the API shows it, with its delivery state (in `MessageList`, `ThreadWithMessages` and `message` frames). */
export type Message = Static<typeof MessageRecord>;
/** The answer of `GET /api/v1/threads/{threadId}/messages`; the answer of `GET /api/v1/messages`. */
export type MessageList = Static<typeof MessageListResponse>;
/** The query of `GET /api/v1/messages`. */
export type MessageListQuery = Static<typeof MessageQuery>;
/** The body of `POST /api/v1/inject`. */
export type Inject = Static<typeof InjectRequest>;
/** The answer of `POST /api/v1/inject`. */
export type Injected = Static<typeof InjectResponse>;
/** The answer of `GET /api/v1/usage`. */
export type Usage = Static<typeof UsageResponse>;
/** The answer of `GET /api/v1/usage/threads/{threadId}`; the answer of `PUT /api/v1/usage/threads/{threadId}`. */
export type ThreadBudget = Static<typeof ThreadBudgetInfo>;
/** The answer of `GET /api/v1/usage/threads`. */
export type ThreadBudgetList = Static<typeof ThreadBudgetListResponse>;
/** The query of `GET /api/v1/usage/threads`. */
export type ThreadBudgetListOptions = Static<typeof ThreadBudgetListQuery>;
/** The body of `PUT /api/v1/usage/threads/{threadId}`. */
export type SetBudget = Static<typeof SetBudgetRequest>;
/** The answer of `GET /api/v1/usage/agents/{agentId}`. */
export type AgentUsage = Static<typeof AgentUsageInfo>;
/** The answer of `GET /api/v1/usage/models/{model}`. */
export type ModelUsage = Static<typeof ModelUsageInfo>;
/** The answer of `POST /api/v1/usage/reset`. */
export type UsageReset = Static<typeof ResetResponse>;
/** The answer of `GET /api/v1/usage/history`. */
export type UsageHistory = Static<typeof UsageHistoryResponse>;
/** The query of `GET /api/v1/usage/history`. */
export type UsageHistoryOptions = Static<typeof UsageHistoryQuery>;
/** The answer of `GET /api/v1/usage/billing`. */
export type Billing = Static<typeof BillingResponse>;
/** The query of `GET /api/v1/usage/billing`. */
export type BillingOptions = Static<typeof BillingQuery>;
/** The answer of `GET /api/v1/usage/daily`. */
export type Daily = Static<typeof DailyResponse>;
/** The query of `GET /api/v1/usage/daily`. */
export type DailyOptions = Static<typeof DailyQuery>;
/** The answer of `GET /api/v1/journal/{messageId}`. */
export type JournalEntry = Static<typeof JournalEntryInfo>;
/** The answer of `GET /api/v1/journal`. */
export type JournalList = Static<typeof JournalListResponse>;
/** The query of `GET /api/v1/journal`. */
export type JournalListQuery = Static<typeof JournalQuery>;
/** The answer of `POST /api/v1/journal/{messageId}/redeliver`. */
export type Redeliver = Static<typeof RedeliverResponse>;
/** The body of `POST /api/v1/threads/kill`: `threadIds` or `filter`. */
export type BulkKill = Static<typeof BulkKillRequest>;
/** The answer of `POST /api/v1/threads/kill`. */
export type BulkKilled = Static<typeof BulkKillResponse>;
/** The body of `POST /api/v1/journal/redeliver`: `messageIds` or `filter`. */
export type BulkRedeliver = Static<typeof BulkRedeliverRequest>;
/** The answer of `POST /api/v1/journal/redeliver`. */
export type BulkRedelivered = Static<typeof BulkRedeliverResponse>;
/** An open item of the inbox: an ask waiting for a person (in `InboxList` and `inbox_opened` frames). */
export type InboxItem = Static<typeof InboxItemSchema>;
/** The answer of `GET /api/v1/inbox`. */
export type InboxList = Static<typeof InboxListResponse>;
/** The query of `GET /api/v1/inbox`. */
export type InboxListQuery = Static<typeof InboxQuery>;
/** The body of `POST /api/v1/inbox/{id}/answer`: `payload` as in inject, `to` one of the listener's peers (default: the asker). */
export type InboxAnswer = Static<typeof AnswerRequest>;
/** The body of `POST /api/v1/inbox/{id}/approve`: `calls` edits the proposed calls' arguments (by call id). */
export type InboxApprove = Static<typeof ApproveRequest>;
/** The answer of `POST /api/v1/inbox/{id}/answer`: the message sent. */
export type InboxAnswered = Static<typeof AnswerResponse>;
/** The body of `POST /api/v1/inbox/{id}/reject`. */
export type InboxReject = Static<typeof RejectRequest>;
/** How an item closed: the answer of `POST /api/v1/inbox/{id}/reject`, and the `inbox_closed` frame's fields. */
export type InboxClosed = Static<typeof InboxClosedSchema>;
/** Open inbox items by kind (on `GET /api/v1/organism` and in the snapshot). */
export type InboxCounts = Static<typeof InboxCountsSchema>;
/** The body of every error answer: `detail`, `code` and, for invalid input, `errors`. */
export type ApiErrorBody = Static<typeof ErrorBody>;

/** Any frame the service sends on /ws. */
export type ServerFrame = Static<typeof F.ServerFrame>;
/** The `connected` frame of /ws. */
export type ConnectedFrame = Static<typeof F.ConnectedFrame>;
/** The `message` frame of /ws. */
export type MessageFrame = Static<typeof F.MessageFrame>;
/** The `agent_state` frame of /ws. */
export type AgentStateFrame = Static<typeof F.AgentStateFrame>;
/** The `thread_created` frame of /ws. */
export type ThreadCreatedFrame = Static<typeof F.ThreadCreatedFrame>;
/** The `thread_updated` frame of /ws. */
export type ThreadUpdatedFrame = Static<typeof F.ThreadUpdatedFrame>;
/** The `usage` frame of /ws. */
export type UsageFrame = Static<typeof F.UsageFrame>;
/** The `budget_warning` frame of /ws. */
export type BudgetWarningFrame = Static<typeof F.BudgetWarningFrame>;
/** The `peer_denied` frame of /ws. */
export type PeerDeniedFrame = Static<typeof F.PeerDeniedFrame>;
/** The `reload` frame of /ws. */
export type ReloadFrame = Static<typeof F.ReloadFrame>;
/** The `organism_status` frame of /ws. */
export type OrganismStatusFrame = Static<typeof F.OrganismStatusFrame>;
/** The `journal_failed` frame of /ws. */
export type JournalFailedFrame = Static<typeof F.JournalFailedFrame>;
/** The `worker` frame of /ws. */
export type WorkerFrame = Static<typeof F.WorkerFrame>;
/** The `deliveries_taken_back` frame of /ws. */
export type DeliveriesTakenBackFrame = Static<typeof F.DeliveriesTakenBackFrame>;
/** The `inbox_opened` frame of /ws. */
export type InboxOpenedFrame = Static<typeof F.InboxOpenedFrame>;
/** The `inbox_closed` frame of /ws. */
export type InboxClosedFrame = Static<typeof F.InboxClosedFrame>;
/** The `thread_held` frame of /ws (issue 30). */
export type ThreadHeldFrame = Static<typeof F.ThreadHeldFrame>;
/** The `thread_resumed` frame of /ws. */
export type ThreadResumedFrame = Static<typeof F.ThreadResumedFrame>;
/** The `loop_detected` frame of /ws. */
export type LoopDetectedFrame = Static<typeof F.LoopDetectedFrame>;
/** The `thread_erased` frame of /ws. */
export type ThreadErasedFrame = Static<typeof F.ThreadErasedFrame>;
/** The `subscribed` frame of /ws. */
export type SubscribedFrame = Static<typeof F.SubscribedFrame>;
/** The `injected` frame of /ws. */
export type InjectedFrame = Static<typeof F.InjectedFrame>;
/** The `pong` frame of /ws. */
export type PongFrame = Static<typeof F.PongFrame>;
/** The `error` frame of /ws. */
export type ErrorFrame = Static<typeof F.ErrorFrame>;
/** Which frames a /ws connection receives (empty lists: everything). */
export type WsFilter = Static<typeof F.WsFilter>;
/** A frame by its `event` name. */
export type FrameOf<E extends ServerFrame['event']> = Extract<ServerFrame, { event: E }>;
