// Every call the console makes to the control service, in one place, through organism/client
// (the typed client of the package, src/client): the same REST routes an operator would use
// with curl (docs/api.md). Errors carry the API's own `detail`.
import {
  createClient,
  OrganismApiError,
  type Agent,
  type AgentList,
  type AgentSchema,
  type Billing as WireBilling,
  type BulkKill,
  type BulkKilled,
  type BulkRedeliver,
  type BulkRedelivered,
  type Capability as WireCapability,
  type CapabilityList,
  type Daily,
  type EdgeTraffic,
  type Forked,
  type ThreadComparison,
  type InboxAnswer,
  type InboxAnswered,
  type InboxClosed,
  type InboxCounts as WireInboxCounts,
  type InboxItem as WireInboxItem,
  type InboxList,
  type Inject,
  type Injected,
  type Journal,
  type JournalEntry as WireJournalEntry,
  type JournalListQuery,
  type LlmCall as WireLlmCall,
  type Message,
  type Organism,
  type OrganismClient,
  type Reload,
  type Thread,
  type ThreadBudget as WireThreadBudget,
  type ThreadBudgetList,
  type ThreadList,
  type ThreadListQuery,
  type Usage,
  type UsageHistory,
  type WhoAmI,
  type WorkerList,
  type ScheduleList,
  type WebhookList,
} from 'organism/client';

// The wire types are the client's (derived from the service's schemas), under the names the
// views use; a few open objects of the schemas are narrowed to what the server puts in them.
export type Role = WhoAmI['role'];
export type AgentState = Agent['state'];
export type DeliveryState = Message['deliveryState'];
export type ThreadStatus = Thread['status'];
export type RecoveryReport = NonNullable<Journal['lastRecovery']>;
export type JournalStats = Journal;
export type OrganismInfo = Organism;
export type AgentInfo = Agent;
export type ThreadInfo = Thread;
export type MessageRecord = Message;
/** One process of the organism (GET /workers). */
export type WorkerInfo = WorkerList['workers'][number];
/** A schedule with its latest ticks (GET /schedules). */
export type ScheduleInfo = ScheduleList['schedules'][number];
/** A webhook delivery (GET /webhooks). */
export type WebhookDeliveryInfo = WebhookList['deliveries'][number];
/** The schema's metadata is an open object: string values (the server only stores those). */
export type JournalEntry = Omit<WireJournalEntry, 'metadata'> & { metadata: Record<string, string> };
/** The counters every usage figure carries. */
export type Counts = Pick<WireBilling, 'totalTokens' | 'promptTokens' | 'completionTokens' | 'requestCount' | 'totalCost'>;
export type UsageOverview = Usage['usage'];
export type ThreadBudget = WireThreadBudget;
export type UsageEvent = UsageHistory['events'][number];
/** The schema describes per-model, per-agent and per-org maps as open objects; their values are Counts. */
export type Billing = Omit<WireBilling, 'byModel' | 'byAgent' | 'byOrg'> & {
  byModel: Record<string, Counts>;
  byAgent: Record<string, Counts>;
  byOrg: Record<string, Counts>;
};
/** The JSON Schema of a capability's payload, as far as the inject form reads it. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  const?: unknown;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
}
/** A capability as listed (its summary) or fetched (with its schemas); jsonSchema, an open object in the schema, is a JSON Schema. */
export type Capability = CapabilityList['capabilities'][number] & Partial<Omit<WireCapability, 'jsonSchema'>> & { jsonSchema?: JsonSchema };
export type ReloadResult = Reload;
/** One recorded LLM call (a provider attempt) with the MCP tool calls it asked for (operators only). */
export type LlmCall = WireLlmCall;
export type ForkResult = Forked;
export type Comparison = ThreadComparison;
/**
 * An ask or an approval waiting for a person (GET /inbox); its answerSchema, an open object in
 * the schema, is a JSON Schema (for an approval: the array of `{id, arguments}` approve's `calls` must meet).
 */
export type InboxItem = Omit<WireInboxItem, 'answerSchema' | 'peerSchemas'> & {
  answerSchema: JsonSchema & { oneOf?: JsonSchema[] };
  peerSchemas: Record<string, JsonSchema & { oneOf?: JsonSchema[] }>;
};
export type InboxCounts = WireInboxCounts;
export type Page = Pick<ThreadList, 'count' | 'total' | 'offset' | 'limit'>;

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
  whoami: (token?: string): Promise<WhoAmI> => call((c) => c.whoami(), token),
  organism: (): Promise<OrganismInfo> => call((c) => c.organism.info()),
  config: (): Promise<Record<string, unknown>> => call((c) => c.organism.config()),
  configYaml: (): Promise<string> => call((c) => c.organism.configYaml()),
  edges: (): Promise<EdgeTraffic> => call((c) => c.organism.edges()),
  workers: (): Promise<WorkerList> => call((c) => c.workers()),
  schedules: (): Promise<ScheduleList> => call((c) => c.schedules.list({ ticks: 5 })),
  webhooks: (): Promise<WebhookList> => call((c) => c.webhooks.list({ limit: 20 })),
  reload: (dryRun: boolean): Promise<ReloadResult> => call((c) => c.organism.reload(dryRun ? { dryRun: true } : {})),
  agents: (): Promise<AgentList> => call((c) => c.agents.list()),
  agent: (name: string): Promise<AgentInfo> => call((c) => c.agents.get(name)),
  agentSchema: (name: string): Promise<AgentSchema> => call((c) => c.agents.schema(name)),
  capabilities: (): Promise<{ capabilities: Capability[] }> => call((c) => c.capabilities.list()),
  capability: (name: string): Promise<Capability> => call((c) => c.capabilities.get(name)),
  pause: (name: string): Promise<unknown> => call((c) => c.agents.pause(name)),
  resume: (name: string): Promise<unknown> => call((c) => c.agents.resume(name)),
  // The status comes from a <select> of the valid values (the server answers 422 otherwise).
  threads: (q: { status?: string; agent?: string; text?: string; startTime?: string; endTime?: string; limit: number; offset: number }): Promise<ThreadList> =>
    call((c) => c.threads.list(given(q) as ThreadListQuery)),
  killMany: (selection: BulkKill): Promise<BulkKilled> => call((c) => c.threads.killMany(selection)),
  thread: (id: string): Promise<ThreadInfo> => call((c) => c.threads.get(id)),
  threadMessages: (id: string, limit = 100, offset = 0): Promise<Page & { messages: MessageRecord[] }> => call((c) => c.threads.messages(id, { limit, offset })),
  kill: (id: string): Promise<unknown> => call((c) => c.threads.kill(id)),
  pauseThread: (id: string, reason: string): Promise<unknown> => call((c) => c.threads.pause(id, reason.trim() ? { reason: reason.trim() } : {})),
  resumeThread: (id: string, raiseLimits: boolean): Promise<unknown> => call((c) => c.threads.resume(id, raiseLimits ? { raiseLimits: true } : {})),
  // Time travel (docs/time-travel.md): a fork of the thread, and two threads side by side.
  fork: (id: string, body: { atMessageId?: string; configPath?: string }): Promise<ForkResult> => call((c) => c.threads.fork(id, body)),
  compare: (a: string, b: string): Promise<Comparison> => call((c) => c.threads.compare(a, b)),
  messages: (q: { agent?: string; threadId?: string; limit: number }): Promise<Page & { messages: MessageRecord[] }> => call((c) => c.messages.list(given(q))),
  // Raw JSON typed by the operator may be anything: the server says what is wrong with it (422).
  inject: (body: { to: string; payload: unknown; threadId?: string; metadata?: Record<string, string> }): Promise<Injected> => call((c) => c.inject(body as Inject)),
  usage: (): Promise<Usage> => call((c) => c.usage.overview()),
  budgets: (): Promise<ThreadBudgetList> => call((c) => c.usage.threads()),
  budget: (id: string): Promise<ThreadBudget> => call((c) => c.usage.thread(id)),
  setBudget: (id: string, maxTokens: number): Promise<ThreadBudget> => call((c) => c.usage.setThreadBudget(id, maxTokens)),
  agentUsage: (name: string): Promise<Counts> => call((c) => c.usage.agent(name)),
  usageHistory: (q: { threadId?: string; limit: number }): Promise<Page & { events: UsageEvent[] }> => call((c) => c.usage.history(given(q))),
  // The schemas describe per-model and per-agent maps as open objects; their values are Counts.
  billing: (q: { startTime?: string; endTime?: string }): Promise<Billing> => call((c) => c.usage.billing(given(q))) as Promise<Billing>,
  daily: (q: { startTime?: string; endTime?: string }): Promise<Daily> => call((c) => c.usage.daily(given(q))),
  // Entries' metadata is an open object in the schema: string values (the server only stores those).
  journal: (q: {
    state?: string;
    agent?: string;
    threadId?: string;
    text?: string;
    startTime?: string;
    endTime?: string;
    limit: number;
    offset: number;
  }): Promise<Page & { entries: JournalEntry[]; searchTruncated?: boolean }> =>
    call((c) => c.journal.list(given(q) as JournalListQuery)) as Promise<Page & { entries: JournalEntry[]; searchTruncated?: boolean }>,
  redeliverMany: (selection: BulkRedeliver): Promise<BulkRedelivered> => call((c) => c.journal.redeliverMany(selection)),
  // answerSchema is an open object in the schema: the JSON Schema an answer must meet.
  inbox: (q: { threadId?: string; listener?: string; limit: number; offset: number }): Promise<Omit<InboxList, 'items'> & { items: InboxItem[] }> =>
    call((c) => c.inbox.list(given(q))) as Promise<Omit<InboxList, 'items'> & { items: InboxItem[] }>,
  // A payload built from raw JSON may be anything: the server says what is wrong with it (422).
  answer: (id: string, body: { payload: unknown; to?: string; note?: string }): Promise<InboxAnswered> => call((c) => c.inbox.answer(id, body as InboxAnswer)),
  // Edited arguments may be anything the person typed: the server checks them against the tool's parameters (422 naming the field).
  approve: (id: string, body: { calls?: Array<{ id: string; arguments: unknown }>; note?: string }): Promise<InboxClosed> => call((c) => c.inbox.approve(id, body)),
  reject: (id: string, note: string): Promise<InboxClosed> => call((c) => c.inbox.reject(id, note)),
  journalStats: (): Promise<JournalStats> => call((c) => c.journal.stats()),
  redeliver: (id: string): Promise<unknown> => call((c) => c.journal.redeliver(id)),
  threadLlmCalls: (id: string, limit = 100): Promise<Page & { calls: LlmCall[] }> => call((c) => c.threads.llmCalls(id, { limit })),
  agentLlmCalls: (name: string, limit = 25): Promise<Page & { calls: LlmCall[] }> => call((c) => c.agents.llmCalls(name, { limit })),
};
