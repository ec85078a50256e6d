// Every call the console makes to the control service, in one place, through organism/client
// (the typed client of the package, src/client): the same REST routes an operator would use
// with curl (docs/api.md). Errors carry the API's own `detail`.
import { createClient, OrganismApiError, type Inject, type JournalListQuery, type OrganismClient, type ThreadListQuery } from 'organism/client';

export type Role = 'operator' | 'viewer';
export type AgentState = 'idle' | 'processing' | 'waiting' | 'error' | 'paused';
export type DeliveryState = 'PENDING' | 'DISPATCHED' | 'ACKED' | 'FAILED';
export type ThreadStatus = 'active' | 'completed' | 'error' | 'killed';

export interface RecoveryReport {
  bootId: string;
  at: string;
  durationMs: number;
  pending: number;
  redelivered: number;
  failedMaxAttempts: number;
}
export interface JournalStats {
  counts: Record<DeliveryState, number>;
  oldestPendingAgeMs: number | null;
  lastRecovery: RecoveryReport | null;
}
export interface OrganismInfo {
  name: string;
  status: string;
  uptimeSeconds: number;
  agentCount: number;
  activeThreads: number;
  totalMessages: number;
  version: string;
  startedAt: string | null;
  bootId: string;
  journal: JournalStats;
}
export interface AgentInfo {
  name: string;
  description: string;
  isAgent: boolean;
  peers: string[];
  payloadClass: string;
  state: AgentState;
  currentThread: string | null;
  queueDepth: number;
  lastActivity: string | null;
  messageCount: number;
  model: string | null;
}
export interface ThreadInfo {
  id: string;
  status: ThreadStatus;
  participants: string[];
  messageCount: number;
  createdAt: string;
  lastActivity: string;
  error: string | null;
}
export interface MessageRecord {
  id: string;
  threadId: string;
  from: string;
  to: string;
  payloadType: string;
  payload: unknown;
  timestamp: string;
  parentId: string | null;
  deliveryState: DeliveryState;
}
export interface JournalEntry extends MessageRecord {
  metadata: Record<string, string>;
  attempts: number;
  createdAt: string;
  dispatchedAt: string | null;
  ackedAt: string | null;
  failedAt: string | null;
  failureReason: string | null;
  error: string | null;
}
export interface Counts {
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  requestCount: number;
  totalCost: number;
}
export interface UsageOverview {
  totals: Counts & { avgLatencyMs: number; unpricedRequests: number };
  byAgent: Array<Counts & { agentId: string }>;
  byModel: Array<Counts & { model: string }>;
  activeThreads: number;
}
export interface ThreadBudget {
  threadId: string;
  maxTokens: number;
  totalTokens: number;
  remaining: number;
  percentUsed: number;
  isExhausted: boolean;
}
export interface UsageEvent {
  id: string;
  timestamp: string;
  threadId: string;
  agentId: string;
  messageId: string | null;
  model: string;
  provider: string;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  totalLatencyMs: number;
  estimatedCost: number | null;
}
export interface Billing extends Counts {
  byModel: Record<string, Counts>;
  byAgent: Record<string, Counts>;
  byOrg: Record<string, Counts>;
}
export interface Capability {
  name: string;
  description: string;
  isAgent: boolean;
  peers: string[];
  rootTag: string;
  payloadClass?: string;
  schemaXsd?: string;
  exampleXml?: string;
  jsonSchema?: JsonSchema;
}
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
}
export interface ReloadResult {
  success: boolean;
  added: string[];
  removed: string[];
  updated: string[];
  error: string | null;
  dryRun: boolean;
}
export interface Page {
  count: number;
  total: number;
  offset: number;
  limit: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors: Array<{ location: string; field: string; message: string }> = [],
  ) {
    super(detail);
  }
}

let currentToken: string | null = null;
/** Set by the session on sign-in and sign-out; every request carries it. */
export function setApiToken(token: string | null): void {
  currentToken = token;
}
export function getApiToken(): string | null {
  return currentToken;
}

/** One client per token, on this page's origin (the console is served by the service itself). */
const clients = new Map<string, OrganismClient>();
export function clientFor(token: string | null = currentToken): OrganismClient {
  const key = token ?? '';
  let c = clients.get(key);
  if (!c) {
    if (clients.size > 4) clients.clear(); // signed-out tokens are not kept around
    c = createClient({ baseUrl: location.origin, ...(token ? { token } : {}) });
    clients.set(key, c);
  }
  return c;
}

/** Runs a client call; its errors become ApiError (status 0: the server cannot be reached). */
async function call<T>(fn: (c: OrganismClient) => Promise<T>, token?: string): Promise<T> {
  try {
    return await fn(clientFor(token ?? currentToken));
  } catch (err) {
    if (err instanceof OrganismApiError) throw new ApiError(err.status, err.detail, err.errors ?? []);
    throw new ApiError(0, 'The server cannot be reached');
  }
}

/** Query values the console leaves empty are not sent. */
function given<Q extends Record<string, unknown>>(query: Q): { [K in keyof Q]: Exclude<Q[K], '' | null> } {
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== '')) as { [K in keyof Q]: Exclude<Q[K], '' | null> };
}

export const api = {
  whoami: (token?: string): Promise<{ name: string; role: Role }> => call((c) => c.whoami(), token),
  organism: (): Promise<OrganismInfo> => call((c) => c.organism.info()),
  config: (): Promise<Record<string, unknown>> => call((c) => c.organism.config()),
  edges: (): Promise<{ edges: Array<{ from: string; to: string; messages: number; denied: number }> }> => call((c) => c.organism.edges()),
  reload: (dryRun: boolean): Promise<ReloadResult> => call((c) => c.organism.reload(dryRun ? { dryRun: true } : {})),
  agents: (): Promise<{ agents: AgentInfo[] }> => call((c) => c.agents.list()),
  agent: (name: string): Promise<AgentInfo> => call((c) => c.agents.get(name)),
  agentSchema: (name: string): Promise<{ schema: string }> => call((c) => c.agents.schema(name)),
  capabilities: (): Promise<{ capabilities: Capability[] }> => call((c) => c.capabilities.list()),
  capability: (name: string): Promise<Capability> => call((c) => c.capabilities.get(name)),
  pause: (name: string): Promise<unknown> => call((c) => c.agents.pause(name)),
  resume: (name: string): Promise<unknown> => call((c) => c.agents.resume(name)),
  // The status comes from a <select> of the valid values (the server answers 422 otherwise).
  threads: (q: { status?: string; agent?: string; limit: number; offset: number }): Promise<Page & { threads: ThreadInfo[] }> =>
    call((c) => c.threads.list(given(q) as ThreadListQuery)),
  thread: (id: string): Promise<ThreadInfo> => call((c) => c.threads.get(id)),
  threadMessages: (id: string, limit = 100, offset = 0): Promise<Page & { messages: MessageRecord[] }> => call((c) => c.threads.messages(id, { limit, offset })),
  kill: (id: string): Promise<unknown> => call((c) => c.threads.kill(id)),
  messages: (q: { agent?: string; threadId?: string; limit: number }): Promise<Page & { messages: MessageRecord[] }> => call((c) => c.messages.list(given(q))),
  // Raw JSON typed by the operator may be anything: the server says what is wrong with it (422).
  inject: (body: { to: string; payload: unknown; threadId?: string; metadata?: Record<string, string> }): Promise<{ threadId: string; messageId: string }> =>
    call((c) => c.inject(body as Inject)),
  usage: (): Promise<{ usage: UsageOverview }> => call((c) => c.usage.overview()),
  budgets: (): Promise<{ threads: ThreadBudget[]; defaultMaxTokens: number }> => call((c) => c.usage.threads()),
  budget: (id: string): Promise<ThreadBudget> => call((c) => c.usage.thread(id)),
  setBudget: (id: string, maxTokens: number): Promise<ThreadBudget> => call((c) => c.usage.setThreadBudget(id, maxTokens)),
  agentUsage: (name: string): Promise<Counts> => call((c) => c.usage.agent(name)),
  usageHistory: (q: { threadId?: string; limit: number }): Promise<Page & { events: UsageEvent[] }> => call((c) => c.usage.history(given(q))),
  // The schemas describe per-model and per-agent maps as open objects; their values are Counts.
  billing: (q: { startTime?: string; endTime?: string }): Promise<Billing> => call((c) => c.usage.billing(given(q))) as Promise<Billing>,
  daily: (q: { startTime?: string; endTime?: string }): Promise<{ days: Array<{ date: string; totalTokens: number; requestCount: number; totalCost: number }> }> =>
    call((c) => c.usage.daily(given(q))),
  // Entries' metadata is an open object in the schema: string values (the server only stores those).
  journal: (q: { state?: string; agent?: string; threadId?: string; limit: number; offset: number }): Promise<Page & { entries: JournalEntry[] }> =>
    call((c) => c.journal.list(given(q) as JournalListQuery)) as Promise<Page & { entries: JournalEntry[] }>,
  journalStats: (): Promise<JournalStats> => call((c) => c.journal.stats()),
  redeliver: (id: string): Promise<unknown> => call((c) => c.journal.redeliver(id)),
};
