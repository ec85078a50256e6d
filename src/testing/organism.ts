import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigInvalidError } from '../config/errors.js';
import { loadOrganism, loadOrganismFromString } from '../config/load.js';
import type { LoadedOrganism } from '../config/types.js';
import type { InboxClosed, InboxItem } from '../core/inbox.js';
import type { DeliveryState, JournalEntry } from '../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import type { StorageParts } from '../core/storage.js';
import type { ThreadRecord, ThreadStatus } from '../core/thread.js';
import type { LlmProvider } from '../llm/types.js';
import { Errors } from '../errors/catalogue.js';
import { Organism } from '../organism/organism.js';
import { memoryLogger, type LogLine } from './logs.js';
import { bindScriptTypes } from './scripted.js';

/** Where `createTestOrganism` reads organism.yaml: a path or file URL, or the text itself. */
export type TestConfig =
  | string
  | URL
  | {
      /** organism.yaml's text. */
      readonly yaml: string;
      /** The directory relative handler modules resolve from (default: the working directory). */
      readonly dir?: string;
    };

/** Options of `createTestOrganism`. */
export interface TestOrganismOptions {
  /** organism.yaml: a path (relative handler modules resolve from its directory), a file URL, or `{yaml, dir}`. */
  readonly config: TestConfig;
  /** Answers every LLM call instead of the configured providers (see `scripted`). Omitted: the configured ones (mock providers run offline). */
  readonly llm?: LlmProvider;
  /** `memory` (default), or `sqlite`: a store in a temporary directory, removed by `close()`. */
  readonly store?: 'memory' | 'sqlite';
  /** Values for `${VAR}` in organism.yaml, over process.env. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long `settled()` waits before it rejects (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** Keep the mock providers' `latency_ms` (default false: scripted answers come at once). */
  readonly mockLatency?: boolean;
}

/** A message of a thread with its delivery record. */
export interface TestMessage {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly payloadType: string;
  readonly payload: Readonly<Record<string, unknown>>;
  /** ACKED: handled; FAILED: its handler failed (see `error`); PENDING/DISPATCHED: not handled yet. */
  readonly state: DeliveryState;
  readonly error: string | null;
  readonly attempts: number;
  readonly parentId: string | null;
  readonly hops: number;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What a thread's LLM calls used, from the usage records. */
export interface TestUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** USD; calls of models without a price count 0 (see `unpricedCalls`). */
  readonly cost: number;
  readonly calls: number;
  readonly unpricedCalls: number;
}

/**
 * A thread once nothing of it runs: how it ended (or that it waits for a person) and
 * everything it did.
 */
export interface SettledThread {
  readonly id: string;
  /** `completed`, `error`, `killed`, or `waiting`: an ask or an approval of it waits in the inbox (see `asks`). */
  readonly status: Exclude<ThreadStatus, 'active'>;
  readonly error: string | null;
  /** Its open inbox items (asks to answer, tool calls to approve), oldest first: empty unless `waiting`. */
  readonly asks: readonly InboxItem[];
  readonly messages: readonly TestMessage[];
  /** Every LLM call (provider attempt) made in it, oldest first. */
  readonly llmCalls: readonly LlmCallRecord[];
  /** Every tool call (code and MCP) its agents made inside their turns, oldest first. */
  readonly toolCalls: readonly ToolCallRecord[];
  readonly usage: TestUsage;
  /** What its handlers logged (`ctx.log`) and the organism logged about it. */
  readonly logs: readonly LogLine[];
}

/** A thread started by `inject`: wait for it with `settled()`, or read it as it goes. */
export interface TestThread {
  readonly id: string;
  /** The injected message's id. */
  readonly messageId: string;
  /**
   * Resolves once nothing of the thread runs: it completed, failed or was killed, or it is
   * `waiting` for a person (an ask open: answer it with `org.answer`, then call `settled()`
   * again). Waits on the organism's events, not by polling; rejects after `timeoutMs` naming
   * the deliveries still open.
   */
  settled(options?: { readonly timeoutMs?: number }): Promise<SettledThread>;
  /**
   * As `settled()`, but a `waiting` thread is waited through: resolves once it completed,
   * failed or was killed (e.g. after its ask expired, `on_timeout`).
   */
  finished(options?: { readonly timeoutMs?: number }): Promise<SettledThread>;
  /** Its open inbox items (asks and approvals), oldest first. */
  asks(): Promise<readonly InboxItem[]>;
  messages(): Promise<readonly TestMessage[]>;
  llmCalls(): Promise<readonly LlmCallRecord[]>;
  toolCalls(): Promise<readonly ToolCallRecord[]>;
  usage(): Promise<TestUsage>;
  /** Lines logged about this thread so far. */
  readonly logs: readonly LogLine[];
}

/** Options of `TestOrganism.inject`. */
export interface TestInjectOptions {
  /** Continue this thread (default: a new one). */
  readonly threadId?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** The sender (default `api`). */
  readonly from?: string;
}

/** Options of `TestOrganism.answer`. */
export interface TestAnswerOptions {
  /** Send the answer to this peer of the human listener instead of replying to the asker. */
  readonly to?: string;
  readonly note?: string;
  /** Who answered, as the journal records it (default `test`). */
  readonly by?: string;
}

/** Which open items `TestOrganism.inbox` lists. */
export interface TestInboxQuery {
  readonly listener?: string;
  readonly threadId?: string;
  /** Asks or approvals only (default: both). */
  readonly kind?: 'ask' | 'approval';
}

/** Options of `TestOrganism.approve`. */
export interface TestApproveOptions {
  /** Edited calls: `{id, arguments}` of proposed calls (by their id), run with these arguments instead. */
  readonly calls?: readonly { readonly id: string; readonly arguments: unknown }[];
  readonly note?: string;
  /** Who approved, as the journal records it (default `test`). */
  readonly by?: string;
}

/** The message an answer sent (PENDING: it is on its way). */
export interface TestAnswer {
  readonly id: string;
  readonly threadId: string;
  readonly from: string;
  readonly to: string;
  readonly payloadType: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly parentId: string | null;
}

/** An organism running in this process for a test, on a temporary store. */
export interface TestOrganism extends AsyncDisposable {
  /** The organism's name (`organism.name`). */
  readonly name: string;
  /**
   * Sends `payload` to listener `to` as the API would: the bare fields of the type it accepts,
   * or `{"Type": {...}}`. Throws the API's error when the payload is invalid.
   */
  inject(to: string, payload: Readonly<Record<string, unknown>>, options?: TestInjectOptions): Promise<TestThread>;
  /** `inject`, then `settled()`. */
  run(to: string, payload: Readonly<Record<string, unknown>>, options?: TestInjectOptions): Promise<SettledThread>;
  /** A thread by id (one injected earlier, or one a handler continued). */
  thread(id: string): TestThread;
  pause(listener: string): Promise<void>;
  resume(listener: string): Promise<void>;
  kill(threadId: string): Promise<void>;
  /** The inbox's open items (asks to `builtin:human` listeners, tool calls waiting for approval), oldest first, as `GET /api/v1/inbox` lists them. */
  inbox(query?: TestInboxQuery): Promise<readonly InboxItem[]>;
  /**
   * Answers an ask as a person would (`POST /api/v1/inbox/{id}/answer`): `payload` in the
   * inject form, a reply to the asker unless `to` names a peer of the human listener. Throws
   * the API's error: INVALID_PAYLOAD naming the fields, INBOX_ITEM_CLOSED when it is no longer open.
   */
  answer(id: string, payload: Readonly<Record<string, unknown>>, options?: TestAnswerOptions): Promise<TestAnswer>;
  /**
   * Approves the tool calls an agent proposed (`POST /api/v1/inbox/{id}/approve`), as proposed
   * or with `calls` edited; the delivery goes on (call `settled()` again). Throws the API's
   * error: INVALID_REQUEST naming an edited argument, INBOX_ITEM_CLOSED when already decided.
   */
  approve(id: string, options?: TestApproveOptions): Promise<InboxClosed>;
  /**
   * Rejects an item (`POST /api/v1/inbox/{id}/reject`): an ask fails `rejected` with the note
   * (the asker gets a SystemError); an approval's agent hears the refusal and answers again.
   */
  reject(id: string, note: string, options?: { readonly by?: string }): Promise<InboxClosed>;
  /** Everything logged since start (debug and up). */
  readonly logs: readonly LogLine[];
  /** Stops the organism (in-flight handlers get a second to finish, then are aborted) and removes its temporary store; again: nothing more. */
  close(): Promise<void>;
}

const PAGE = 500;

/**
 * Starts an organism from organism.yaml in this process, for a test: a memory store (or a
 * temporary SQLite one), nothing listening on the network, LLM calls answered by `llm` when
 * given. Close it when done (`await org.close()`, or `await using org = ...`).
 */
export async function createTestOrganism(options: TestOrganismOptions): Promise<TestOrganism> {
  const env = { ...process.env, ...(options.env ?? {}) };
  const loaded = withoutLatency(await load(options.config, env), options.mockLatency === true);
  if (!options.llm && loaded.missingKeys && loaded.missingKeys.length > 0) throw new ConfigInvalidError(loaded.missingKeys);
  const { logger, lines } = memoryLogger();
  let dataDir: string | null = null;
  let storage: StorageParts | undefined;
  if (options.store === 'sqlite') {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-test-'));
    const { openSqliteStorage } = await import('../store/sqlite/storage.js');
    storage = openSqliteStorage({ dataDir, logger });
  }
  const organism = new Organism(loaded, { logger, ...(storage ? { storage } : {}), ...(options.llm ? { providers: [options.llm] } : {}) });
  if (options.llm) {
    bindScriptTypes(options.llm, {
      registry: () => organism.registry,
      acceptedTypes: (name) => {
        if (!organism.hasListener(name)) return null;
        const agent = organism.agent(name);
        return agent.payloadClasses ?? [agent.payloadClass];
      },
    });
  }
  const threads = new ThreadWatch();
  organism.bus.on((event) => {
    if (event.type === 'thread_created' || event.type === 'thread_updated') threads.saw(event.thread);
    // An ask closed (answered, rejected, expired): its thread goes on, so a `waiting` record is
    // stale. The close's thread event comes right after this one (Pump.closeAsk).
    else if (event.type === 'message' && (event.state === 'ACKED' || event.state === 'FAILED') && isHuman(organism, event.message.to)) threads.resumed(event.message.threadId);
    // An approval decided: its delivery goes on (the decision sent it back to PENDING).
    else if (event.type === 'inbox_closed' && event.closed.kind === 'approval') threads.resumed(event.closed.threadId);
  });
  try {
    await organism.start();
  } catch (err) {
    await organism.stop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const defaultTimeout = options.timeoutMs ?? 10_000;
  let closed: Promise<void> | null = null;

  const handle = (id: string, messageId: string): TestThread => {
    const read = threadReader(organism, id);
    return {
      id,
      messageId,
      ...read,
      get logs() {
        return lines.filter((l) => l.threadId === id);
      },
      asks: () => openAsks(organism, { threadId: id }),
      settled: (settleOptions = {}) => settle(settleOptions.timeoutMs ?? defaultTimeout, false),
      finished: (settleOptions = {}) => settle(settleOptions.timeoutMs ?? defaultTimeout, true),
    };
    async function settle(timeoutMs: number, throughWaiting: boolean): Promise<SettledThread> {
      const record = await threads.settled(id, timeoutMs, throughWaiting, () => openDeliveries(organism, id));
      await organism.storage.flush();
      await organism.storage.usage.flush();
      const [messages, llmCalls, toolCalls, usage] = await Promise.all([read.messages(), read.llmCalls(), read.toolCalls(), read.usage()]);
      return {
        id,
        status: record.status as SettledThread['status'],
        error: record.error,
        asks: record.status === 'waiting' ? await openAsks(organism, { threadId: id }) : [],
        messages,
        llmCalls,
        toolCalls,
        usage,
        logs: lines.filter((l) => l.threadId === id),
      };
    }
  };

  const org: TestOrganism = {
    name: organism.name,
    logs: lines,
    async inject(to, payload, injectOptions = {}) {
      const { threadId, messageId } = await organism.inject(to, payload, injectOptions);
      return handle(threadId, messageId);
    },
    async run(to, payload, injectOptions) {
      return (await org.inject(to, payload, injectOptions)).settled();
    },
    thread: (id) => handle(id, ''),
    pause: (listener) => organism.pauseListener(listener),
    resume: (listener) => organism.resumeListener(listener),
    async kill(threadId) {
      await organism.killThread(threadId);
    },
    inbox: (query = {}) => openAsks(organism, query),
    async answer(id, payload, answerOptions = {}) {
      const { to, note, by } = answerOptions;
      const m = await organism.inbox.answer(id, { payload, ...(to !== undefined ? { to } : {}), ...(note !== undefined ? { note } : {}) }, by ?? 'test');
      return { id: m.id, threadId: m.threadId, from: m.from, to: m.to, payloadType: m.payloadType, payload: m.payload, parentId: m.parentId };
    },
    approve(id, approveOptions = {}) {
      const { calls, note, by } = approveOptions;
      return organism.inbox.approve(id, { ...(calls !== undefined ? { calls } : {}), ...(note !== undefined ? { note } : {}) }, by ?? 'test');
    },
    reject: (id, note, rejectOptions = {}) => organism.inbox.reject(id, note, rejectOptions.by ?? 'test'),
    close() {
      closed ??= (async () => {
        try {
          await organism.stop({ timeoutMs: 1_000 });
        } finally {
          if (dataDir) rmSync(dataDir, { recursive: true, force: true });
        }
      })();
      return closed;
    },
    [Symbol.asyncDispose]: () => org.close(),
  };
  return org;
}

async function load(config: TestConfig, env: NodeJS.ProcessEnv): Promise<LoadedOrganism> {
  if (typeof config === 'string' || config instanceof URL) {
    const file = config instanceof URL ? fileURLToPath(config) : path.resolve(config);
    return loadOrganism(file, { env });
  }
  return loadOrganismFromString(config.yaml, path.join(path.resolve(config.dir ?? '.'), 'organism.yaml'), { env });
}

/** The mock providers without their simulated response time: a test waits for nothing. */
function withoutLatency(loaded: LoadedOrganism, keep: boolean): LoadedOrganism {
  if (keep) return loaded;
  const providers = loaded.config.llm.providers.map((p) => (p.type === 'mock' ? { ...p, mockLatencyMs: 0, mockLatencyMaxMs: 0 } : p));
  return { ...loaded, config: { ...loaded.config, llm: { ...loaded.config.llm, providers } } };
}

/** Reads one thread's messages, calls and usage from the store. */
function threadReader(organism: Organism, id: string) {
  const messages = async (): Promise<TestMessage[]> => {
    const out: TestMessage[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await organism.queries.journal.list({ threadId: id, order: 'oldest', limit: PAGE, offset });
      out.push(...page.items.map(testMessage));
      if (page.items.length < PAGE || out.length >= page.total) return out;
    }
  };
  const recorded = async () => {
    const calls: LlmCallRecord[] = [];
    const tools: ToolCallRecord[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await organism.queries.llmCalls.forThread(id, { limit: PAGE, offset });
      calls.push(...page.calls);
      tools.push(...page.tools);
      if (page.calls.length < PAGE || calls.length >= page.total) break;
    }
    const byId = new Map<string, ToolCallRecord>(tools.map((t) => [t.id, t]));
    return {
      calls: calls.sort((a, b) => a.startedAt - b.startedAt),
      tools: [...byId.values()].sort((a, b) => a.startedAt - b.startedAt),
    };
  };
  return {
    messages,
    llmCalls: async () => (await recorded()).calls,
    toolCalls: async () => (await recorded()).tools,
    async usage(): Promise<TestUsage> {
      const totals = await organism.threadUsage(id);
      return {
        promptTokens: totals?.promptTokens ?? 0,
        completionTokens: totals?.completionTokens ?? 0,
        totalTokens: totals?.totalTokens ?? 0,
        cost: totals?.totalCost ?? 0,
        calls: totals?.requestCount ?? 0,
        unpricedCalls: totals?.unpricedRequests ?? 0,
      };
    },
  };
}

function testMessage(entry: JournalEntry): TestMessage {
  const m = entry.message;
  return {
    id: m.id,
    from: m.from,
    to: m.to,
    payloadType: m.payloadType,
    payload: m.payload,
    state: entry.state,
    error: entry.error,
    attempts: entry.attempts,
    parentId: m.parentId,
    hops: m.hops,
    metadata: m.metadata,
  };
}

function isHuman(organism: Organism, listener: string): boolean {
  return organism.config.listeners.some((l) => l.name === listener && l.human !== undefined);
}

/** The open items (asks and approvals, unless `query.kind` says), every page of them. */
async function openAsks(organism: Organism, query: TestInboxQuery): Promise<InboxItem[]> {
  const out: InboxItem[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await organism.inbox.list({ ...query, limit: PAGE, offset });
    out.push(...page.items);
    if (page.items.length < PAGE || out.length >= page.total) return out;
  }
}

/** `writer (DISPATCHED), announcer (PENDING)`: what a thread that did not settle still waits on. */
async function openDeliveries(organism: Organism, id: string): Promise<string> {
  const page = await organism.queries.journal.list({ threadId: id, order: 'oldest', limit: PAGE, offset: 0 }).catch(() => null);
  const open = (page?.items ?? []).filter((e) => e.state === 'PENDING' || e.state === 'DISPATCHED' || e.state === 'AWAITING');
  if (open.length === 0) return 'no delivery is open';
  const paused = new Set(
    organism
      .agents()
      .filter((a) => a.state === 'paused')
      .map((a) => a.name),
  );
  return `open deliveries: ${open.map((e) => `${e.message.from} -> ${e.message.to} (${e.state}${paused.has(e.message.to) ? ', listener paused' : ''})`).join(', ')}`;
}

/** The threads' latest records, from their events, and who waits for which to settle. */
class ThreadWatch {
  private readonly latest = new Map<string, ThreadRecord>();
  private readonly waiters = new Map<string, Set<(record: ThreadRecord) => void>>();

  saw(record: ThreadRecord): void {
    this.latest.set(record.id, record);
    if (record.status === 'active') return;
    for (const wake of this.waiters.get(record.id) ?? []) wake(record);
  }

  /** An ask of the thread closed: a `waiting` record of it is no longer how it stands. */
  resumed(id: string): void {
    if (this.latest.get(id)?.status === 'waiting') this.latest.delete(id);
  }

  /** The thread's record once it stopped (`throughWaiting`: once it finished, `waiting` passed through). */
  settled(id: string, timeoutMs: number, throughWaiting: boolean, open: () => Promise<string>): Promise<ThreadRecord> {
    const stops = (record: ThreadRecord) => record.status !== 'active' && !(throughWaiting && record.status === 'waiting');
    const known = this.latest.get(id);
    if (known && stops(known)) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const wake = (record: ThreadRecord) => {
        if (!stops(record)) return;
        clearTimeout(timer);
        this.waiters.get(id)?.delete(wake);
        resolve(record);
      };
      const timer = setTimeout(() => {
        this.waiters.get(id)?.delete(wake);
        void open().then((what) => reject(Errors.TEST_THREAD_NOT_SETTLED(id, timeoutMs, this.latest.get(id)?.status ?? 'unknown', what)));
      }, timeoutMs);
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      set.add(wake);
    });
  }
}
