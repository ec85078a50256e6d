import type * as T from './types.js';

/** What the client needs of `fetch` (the global one in Node 20 and browsers, or any compatible). */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{
  readonly status: number;
  readonly ok: boolean;
  text(): Promise<string>;
}>;

/** How a client reaches the service: its address, a token, and optionally its own fetch. */
export interface RestOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:8080` (no `/api/v1`). */
  readonly baseUrl: string;
  /** Bearer token (operator, viewer or approver). Omitted: only `health()` works. */
  readonly token?: string;
  readonly fetch?: FetchLike;
}

/** A non-2xx answer: the service's `{detail, code, errors?}` with the HTTP status. */
export class OrganismApiError extends Error {
  override readonly name = 'OrganismApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: T.ApiErrorBody['errors'] = undefined,
    readonly method = '',
    readonly path = '',
  ) {
    super(`${method} ${path}: ${status} ${detail}`.trim());
  }
}

type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

function queryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) params.append(key, String(v));
    else params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

const seg = encodeURIComponent;

/**
 * Every REST route of the control service as a typed method (docs/api.md). Answers are the
 * parsed JSON bodies; any non-2xx answer throws {@link OrganismApiError}.
 */
export class RestClient {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: FetchLike;

  constructor(options: RestOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    const global = (globalThis as { fetch?: FetchLike }).fetch;
    if (!options.fetch && !global) throw new Error('organism client: no fetch available; pass options.fetch');
    // The global fetch called as a method of this object throws "Illegal invocation" in browsers.
    this.#fetch = options.fetch ?? ((url, init) => global!(url, init));
  }

  /** Low-level call: `path` from the server root (`/api/v1/...`). */
  async request<R>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options: { query?: Query; body?: unknown } = {}): Promise<R> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const url = `${this.#base}${path}${queryString(options.query)}`;
    const res = await this.#fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    if (!res.ok) {
      const e = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Partial<T.ApiErrorBody>;
      throw new OrganismApiError(res.status, e.code ?? 'HTTP_ERROR', e.detail ?? (typeof parsed === 'string' ? parsed : `HTTP ${res.status}`), e.errors, method, path);
    }
    return parsed as R;
  }

  #api<R>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options?: { query?: Query; body?: unknown }): Promise<R> {
    return this.request<R>(method, `/api/v1${path}`, options);
  }

  health = (): Promise<T.Health> => this.request('GET', '/health');

  /** The calling token's name and role. */
  whoami = (): Promise<T.WhoAmI> => this.#api('GET', '/whoami');
  openapi = (): Promise<Record<string, unknown>> => this.#api('GET', '/openapi.json');

  readonly organism = {
    info: (): Promise<T.Organism> => this.#api('GET', '/organism'),
    /** The sanitized configuration (env var names, never values). */
    config: (): Promise<Record<string, unknown>> => this.#api('GET', '/organism/config'),
    /** The same, as organism.yaml is written (snake_case keys): YAML text. */
    configYaml: async (): Promise<string> => String(await this.#api<unknown>('GET', '/organism/config', { query: { format: 'yaml' } })),
    edges: (): Promise<T.EdgeTraffic> => this.#api('GET', '/organism/edges'),
    reload: (options: T.ReloadOptions = {}): Promise<T.Reload> => this.#api('POST', '/organism/reload', { query: { ...options } }),
    stop: (): Promise<T.Stop> => this.#api('POST', '/organism/stop'),
    restart: (): Promise<T.Restart> => this.#api('POST', '/organism/restart'),
  };

  /** The processes running this organism, with their heartbeats (scale-out on PostgreSQL). */
  workers = (): Promise<T.WorkerList> => this.#api('GET', '/workers');

  /** Schedules (organism.yaml `schedules:` and added at run time), with their next run and latest ticks. */
  readonly schedules = {
    list: (query: T.ScheduleListQuery = {}): Promise<T.ScheduleList> => this.#api('GET', '/schedules', { query: { ...query } }),
    get: (name: string): Promise<T.Schedule> => this.#api('GET', `/schedules/${seg(name)}`),
    /** Kept in the store: every process of the organism fires it, once per tick, and it outlives restarts. */
    add: (schedule: T.ScheduleInput): Promise<T.Schedule> => this.#api('POST', '/schedules', { body: schedule }),
    /** Only one added at run time (one of organism.yaml: 409). */
    remove: (name: string): Promise<{ success: true }> => this.#api('DELETE', `/schedules/${seg(name)}`),
  };

  /** Outbound webhooks: their delivery counts and recent deliveries (failures with their last status and error). */
  readonly webhooks = {
    list: (query: T.WebhookListQuery = {}): Promise<T.WebhookList> => this.#api('GET', '/webhooks', { query: { ...query } }),
  };

  readonly capabilities = {
    list: (): Promise<T.CapabilityList> => this.#api('GET', '/capabilities'),
    get: (name: string): Promise<T.Capability> => this.#api('GET', `/capabilities/${seg(name)}`),
  };

  readonly agents = {
    list: (): Promise<T.AgentList> => this.#api('GET', '/agents'),
    get: (name: string): Promise<T.Agent> => this.#api('GET', `/agents/${seg(name)}`),
    config: (name: string): Promise<T.AgentSettings> => this.#api('GET', `/agents/${seg(name)}/config`),
    schema: (name: string): Promise<T.AgentSchema> => this.#api('GET', `/agents/${seg(name)}/schema`),
    pause: (name: string): Promise<T.Pause> => this.#api('POST', `/agents/${seg(name)}/pause`),
    resume: (name: string): Promise<T.Resume> => this.#api('POST', `/agents/${seg(name)}/resume`),
    /** The agent's latest recorded LLM calls, newest first, failed attempts included (operator). */
    llmCalls: (name: string, page: { limit?: number; offset?: number } = {}): Promise<T.AgentLlmCalls> => this.#api('GET', `/agents/${seg(name)}/llm-calls`, { query: { ...page } }),
  };

  readonly threads = {
    list: (query: T.ThreadListQuery = {}): Promise<T.ThreadList> => this.#api('GET', '/threads', { query: { ...query } }),
    get: (threadId: string): Promise<T.ThreadWithMessages> => this.#api('GET', `/threads/${seg(threadId)}`),
    messages: (threadId: string, page: T.PageQuery = {}): Promise<T.MessageList> => this.#api('GET', `/threads/${seg(threadId)}/messages`, { query: { ...page } }),
    kill: (threadId: string): Promise<T.Kill> => this.#api('POST', `/threads/${seg(threadId)}/kill`),
    /** Holds the thread: its deliveries stay PENDING until resumed (nothing in flight is interrupted). */
    pause: (threadId: string, body: T.ThreadPause = {}): Promise<T.ThreadHeld> => this.#api('POST', `/threads/${seg(threadId)}/pause`, { body }),
    /** Resumes a held thread; `raiseLimits` doubles the loop breaker's limits for it. */
    resume: (threadId: string, body: T.ThreadResume = {}): Promise<T.ThreadHeld> => this.#api('POST', `/threads/${seg(threadId)}/resume`, { body }),
    /** Erases a finished thread's recorded text (tombstones); 409 while it runs. */
    erase: (threadId: string): Promise<T.ThreadErased> => this.#api('DELETE', `/threads/${seg(threadId)}`),
    /** Kills the threads given (`{threadIds}`) or every unfinished (active or waiting) thread a filter matches (`{filter}`); answers what was done and what was not, with reasons. */
    killMany: (selection: T.BulkKill): Promise<T.BulkKilled> => this.#api('POST', '/threads/kill', { body: selection }),
    /** Recorded LLM calls of the thread, oldest first (operator). */
    llmCalls: (threadId: string, page: { limit?: number; offset?: number } = {}): Promise<T.ThreadLlmCalls> =>
      this.#api('GET', `/threads/${seg(threadId)}/llm-calls`, { query: { ...page } }),
    /** Forks the thread (time travel, operator): a new thread with its history up to `atMessageId`, its LLM calls answered from the record while their requests match. */
    fork: (threadId: string, options: T.Fork = {}): Promise<T.Forked> => this.#api('POST', `/threads/${seg(threadId)}/fork`, { body: options }),
    /** Two threads (a fork beside its source) aligned message by message, with the first divergence and each one's tokens, cost and latency (operator). */
    compare: (a: string, b: string): Promise<T.ThreadComparison> => this.#api('GET', `/threads/${seg(a)}/compare/${seg(b)}`),
    /** The thread as a cassette: its messages and recorded LLM and tool calls, versioned JSON (operator). */
    export: (threadId: string): Promise<T.Cassette> => this.#api('GET', `/threads/${seg(threadId)}/export`),
    /** The thread's deliveries and LLM/tool calls with their timings (no content; viewers may read it). */
    waterfall: (threadId: string): Promise<T.Waterfall> => this.#api('GET', `/threads/${seg(threadId)}/waterfall`),
  };

  readonly messages = {
    list: (query: T.MessageListQuery = {}): Promise<T.MessageList> => this.#api('GET', '/messages', { query: { ...query } }),
  };

  /** Queues a message; answers once it is journaled. `payload` is `{Type: {...}}` or the bare fields. */
  inject = (request: T.Inject): Promise<T.Injected> => this.#api('POST', '/inject', { body: request });

  /** Asks waiting for people (`handler: builtin:human` listeners): list (viewer), answer and reject (approver or operator). */
  readonly inbox = {
    /** Open items, oldest first. */
    list: (query: T.InboxListQuery = {}): Promise<T.InboxList> => this.#api('GET', '/inbox', { query: { ...query } }),
    /** Answers an item: the listener's message to the asker (or to `to`, one of its peers). 409 once it is closed: the first answer wins. */
    answer: (id: string, answer: T.InboxAnswer): Promise<T.InboxAnswered> => this.#api('POST', `/inbox/${seg(id)}/answer`, { body: answer }),
    /** Approves the tool calls a model proposed, as proposed or with edited `calls`; the first decision wins (a later one is a 409). */
    approve: (id: string, approval: T.InboxApprove = {}): Promise<T.InboxClosed> => this.#api('POST', `/inbox/${seg(id)}/approve`, { body: approval }),
    /** Rejects an item with a note: an ask fails (rejected; the asker gets a SystemError), an approval's model hears the refusal and answers again. */
    reject: (id: string, note: string): Promise<T.InboxClosed> => this.#api('POST', `/inbox/${seg(id)}/reject`, { body: { note } satisfies T.InboxReject }),
  };

  readonly usage = {
    overview: (): Promise<T.Usage> => this.#api('GET', '/usage'),
    /** Live budgets by default; `{state: 'finished'}` or `'all'` for the budgets finished threads keep. */
    threads: (query: T.ThreadBudgetListOptions = {}): Promise<T.ThreadBudgetList> => this.#api('GET', '/usage/threads', { query: { ...query } }),
    thread: (threadId: string): Promise<T.ThreadBudget> => this.#api('GET', `/usage/threads/${seg(threadId)}`),
    setThreadBudget: (threadId: string, maxTokens: number): Promise<T.ThreadBudget> => this.#api('PUT', `/usage/threads/${seg(threadId)}`, { body: { maxTokens } satisfies T.SetBudget }),
    agent: (agentId: string): Promise<T.AgentUsage> => this.#api('GET', `/usage/agents/${seg(agentId)}`),
    model: (model: string): Promise<T.ModelUsage> => this.#api('GET', `/usage/models/${seg(model)}`),
    reset: (): Promise<T.UsageReset> => this.#api('POST', '/usage/reset'),
    history: (query: T.UsageHistoryOptions = {}): Promise<T.UsageHistory> => this.#api('GET', '/usage/history', { query: { ...query } }),
    billing: (query: T.BillingOptions = {}): Promise<T.Billing> => this.#api('GET', '/usage/billing', { query: { ...query } }),
    daily: (query: T.DailyOptions = {}): Promise<T.Daily> => this.#api('GET', '/usage/daily', { query: { ...query } }),
  };

  readonly journal = {
    list: (query: T.JournalListQuery = {}): Promise<T.JournalList> => this.#api('GET', '/journal', { query: { ...query } }),
    stats: (): Promise<T.Journal> => this.#api('GET', '/journal/stats'),
    get: (messageId: string): Promise<T.JournalEntry> => this.#api('GET', `/journal/${seg(messageId)}`),
    redeliver: (messageId: string): Promise<T.Redeliver> => this.#api('POST', `/journal/${seg(messageId)}/redeliver`),
    /** Redelivers the FAILED entries given (`{messageIds}`) or every FAILED entry a filter matches (`{filter}`); answers what was done and what was not, with reasons. */
    redeliverMany: (selection: T.BulkRedeliver): Promise<T.BulkRedelivered> => this.#api('POST', '/journal/redeliver', { body: selection }),
    /** Recorded LLM calls (and MCP tool calls) of one delivery (operator). */
    llmCalls: (messageId: string): Promise<T.DeliveryLlmCalls> => this.#api('GET', `/journal/${seg(messageId)}/llm-calls`),
  };
}
