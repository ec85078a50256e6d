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
import type { WorkerListResponse } from '../service/schemas/worker.js';
import type { InjectRequest, InjectResponse } from '../service/schemas/inject.js';
import type { JournalEntryInfo, JournalListResponse, JournalQuery, RedeliverResponse } from '../service/schemas/journal.js';
import type { DeliveryLlmCallsResponse, LlmCallInfo, ThreadLlmCallsResponse } from '../service/schemas/llm-call.js';
import type { MessageListResponse, MessageQuery, MessageRecord } from '../service/schemas/message.js';
import type { EdgeTrafficResponse, JournalStats, OrganismInfo, ReloadQuery, ReloadResponse, RestartResponse, StopResponse } from '../service/schemas/organism.js';
import type { WhoAmI as WhoAmIResponse } from '../service/schemas/whoami.js';
import type { KillResponse, ThreadDetail, ThreadInfo, ThreadListResponse, ThreadPageQuery, ThreadQuery } from '../service/schemas/thread.js';
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

export type Health = Static<typeof HealthResponse>;
export type Organism = Static<typeof OrganismInfo>;
export type EdgeTraffic = Static<typeof EdgeTrafficResponse>;
export type WhoAmI = Static<typeof WhoAmIResponse>;
export type Journal = Static<typeof JournalStats>;
export type LlmCall = Static<typeof LlmCallInfo>;
export type DeliveryLlmCalls = Static<typeof DeliveryLlmCallsResponse>;
export type ThreadLlmCalls = Static<typeof ThreadLlmCallsResponse>;
export type Reload = Static<typeof ReloadResponse>;
export type ReloadOptions = Static<typeof ReloadQuery>;
export type Stop = Static<typeof StopResponse>;
export type Restart = Static<typeof RestartResponse>;
export type CapabilityList = Static<typeof CapabilityListResponse>;
export type Capability = Static<typeof CapabilityDetail>;
export type Agent = Static<typeof AgentInfo>;
export type AgentList = Static<typeof AgentListResponse>;
/** The processes of a shared (PostgreSQL) organism; an embedded one answers shared: false. */
export type WorkerList = Static<typeof WorkerListResponse>;
export type AgentSettings = Static<typeof AgentConfig>;
export type AgentSchema = Static<typeof AgentSchemaResponse>;
export type Pause = Static<typeof PauseResponse>;
export type Resume = Static<typeof ResumeResponse>;
export type Thread = Static<typeof ThreadInfo>;
export type ThreadWithMessages = Static<typeof ThreadDetail>;
export type ThreadList = Static<typeof ThreadListResponse>;
export type ThreadListQuery = Static<typeof ThreadQuery>;
export type PageQuery = Static<typeof ThreadPageQuery>;
export type Kill = Static<typeof KillResponse>;
export type Message = Static<typeof MessageRecord>;
export type MessageList = Static<typeof MessageListResponse>;
export type MessageListQuery = Static<typeof MessageQuery>;
export type Inject = Static<typeof InjectRequest>;
export type Injected = Static<typeof InjectResponse>;
export type Usage = Static<typeof UsageResponse>;
export type ThreadBudget = Static<typeof ThreadBudgetInfo>;
export type ThreadBudgetList = Static<typeof ThreadBudgetListResponse>;
export type ThreadBudgetListOptions = Static<typeof ThreadBudgetListQuery>;
export type SetBudget = Static<typeof SetBudgetRequest>;
export type AgentUsage = Static<typeof AgentUsageInfo>;
export type ModelUsage = Static<typeof ModelUsageInfo>;
export type UsageReset = Static<typeof ResetResponse>;
export type UsageHistory = Static<typeof UsageHistoryResponse>;
export type UsageHistoryOptions = Static<typeof UsageHistoryQuery>;
export type Billing = Static<typeof BillingResponse>;
export type BillingOptions = Static<typeof BillingQuery>;
export type Daily = Static<typeof DailyResponse>;
export type DailyOptions = Static<typeof DailyQuery>;
export type JournalEntry = Static<typeof JournalEntryInfo>;
export type JournalList = Static<typeof JournalListResponse>;
export type JournalListQuery = Static<typeof JournalQuery>;
export type Redeliver = Static<typeof RedeliverResponse>;
export type ApiErrorBody = Static<typeof ErrorBody>;

export type ServerFrame = Static<typeof F.ServerFrame>;
export type ConnectedFrame = Static<typeof F.ConnectedFrame>;
export type MessageFrame = Static<typeof F.MessageFrame>;
export type AgentStateFrame = Static<typeof F.AgentStateFrame>;
export type ThreadCreatedFrame = Static<typeof F.ThreadCreatedFrame>;
export type ThreadUpdatedFrame = Static<typeof F.ThreadUpdatedFrame>;
export type UsageFrame = Static<typeof F.UsageFrame>;
export type BudgetWarningFrame = Static<typeof F.BudgetWarningFrame>;
export type PeerDeniedFrame = Static<typeof F.PeerDeniedFrame>;
export type ReloadFrame = Static<typeof F.ReloadFrame>;
export type OrganismStatusFrame = Static<typeof F.OrganismStatusFrame>;
export type JournalFailedFrame = Static<typeof F.JournalFailedFrame>;
export type SubscribedFrame = Static<typeof F.SubscribedFrame>;
export type InjectedFrame = Static<typeof F.InjectedFrame>;
export type PongFrame = Static<typeof F.PongFrame>;
export type ErrorFrame = Static<typeof F.ErrorFrame>;
export type WsFilter = Static<typeof F.WsFilter>;
/** A frame by its `event` name. */
export type FrameOf<E extends ServerFrame['event']> = Extract<ServerFrame, { event: E }>;
