// Every call the console makes to the control service, in one place: the same REST routes an
// operator would use with curl (docs/api.md). Errors carry the API's own `detail`.

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

type Query = Record<string, string | number | undefined | null>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

/** One REST call; the token goes in the Authorization header, never in the URL. */
export async function request<T>(method: string, path: string, options: { query?: Query; body?: unknown; token?: string } = {}): Promise<T> {
  const token = options.token ?? currentToken;
  const headers: Record<string, string> = {};
  if (token) headers['Authorization'] = `Bearer ${token}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(withQuery(`/api/v1${path}`, options.query), {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'The server cannot be reached');
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const b = (body ?? {}) as { detail?: string; errors?: ApiError['errors'] };
    throw new ApiError(res.status, b.detail ?? `HTTP ${res.status}`, b.errors ?? []);
  }
  return body as T;
}

const enc = encodeURIComponent;

export const api = {
  whoami: (token?: string) => request<{ name: string; role: Role }>('GET', '/whoami', token ? { token } : {}),
  organism: () => request<OrganismInfo>('GET', '/organism'),
  config: () => request<Record<string, unknown>>('GET', '/organism/config'),
  edges: () => request<{ edges: Array<{ from: string; to: string; messages: number; denied: number }> }>('GET', '/organism/edges'),
  reload: (dryRun: boolean) => request<ReloadResult>('POST', '/organism/reload', { query: { dryRun: dryRun ? 'true' : undefined } }),
  agents: () => request<{ agents: AgentInfo[] }>('GET', '/agents'),
  agent: (name: string) => request<AgentInfo>('GET', `/agents/${enc(name)}`),
  agentSchema: (name: string) => request<{ schema: string }>('GET', `/agents/${enc(name)}/schema`),
  capabilities: () => request<{ capabilities: Capability[] }>('GET', '/capabilities'),
  capability: (name: string) => request<Capability>('GET', `/capabilities/${enc(name)}`),
  pause: (name: string) => request<unknown>('POST', `/agents/${enc(name)}/pause`),
  resume: (name: string) => request<unknown>('POST', `/agents/${enc(name)}/resume`),
  threads: (q: { status?: string; agent?: string; limit: number; offset: number }) => request<Page & { threads: ThreadInfo[] }>('GET', '/threads', { query: q }),
  thread: (id: string) => request<ThreadInfo>('GET', `/threads/${enc(id)}`),
  threadMessages: (id: string, limit = 100, offset = 0) => request<Page & { messages: MessageRecord[] }>('GET', `/threads/${enc(id)}/messages`, { query: { limit, offset } }),
  kill: (id: string) => request<unknown>('POST', `/threads/${enc(id)}/kill`),
  messages: (q: { agent?: string; threadId?: string; limit: number }) => request<Page & { messages: MessageRecord[] }>('GET', '/messages', { query: q }),
  inject: (body: { to: string; payload: unknown; threadId?: string; metadata?: Record<string, string> }) =>
    request<{ threadId: string; messageId: string }>('POST', '/inject', { body }),
  usage: () => request<{ usage: UsageOverview }>('GET', '/usage'),
  budgets: () => request<{ threads: ThreadBudget[]; defaultMaxTokens: number }>('GET', '/usage/threads'),
  budget: (id: string) => request<ThreadBudget>('GET', `/usage/threads/${enc(id)}`),
  setBudget: (id: string, maxTokens: number) => request<ThreadBudget>('PUT', `/usage/threads/${enc(id)}`, { body: { maxTokens } }),
  agentUsage: (name: string) => request<Counts>('GET', `/usage/agents/${enc(name)}`),
  usageHistory: (q: { threadId?: string; limit: number }) => request<Page & { events: UsageEvent[] }>('GET', '/usage/history', { query: q }),
  billing: (q: { startTime?: string; endTime?: string }) => request<Billing>('GET', '/usage/billing', { query: q }),
  daily: (q: { startTime?: string; endTime?: string }) =>
    request<{ days: Array<{ date: string; totalTokens: number; requestCount: number; totalCost: number }> }>('GET', '/usage/daily', { query: q }),
  journal: (q: { state?: string; agent?: string; threadId?: string; limit: number; offset: number }) =>
    request<Page & { entries: JournalEntry[] }>('GET', '/journal', { query: q }),
  journalStats: () => request<JournalStats>('GET', '/journal/stats'),
  redeliver: (id: string) => request<unknown>('POST', `/journal/${enc(id)}/redeliver`),
};
