import type { ListenerConfig, ResolvedListener } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { EventBus } from '../events/bus.js';
import type { AgentState, OrganismStatus, ReloadResult } from '../events/types.js';
import type { LlmRouter } from '../llm/router.js';
import type { BoundLlmClient } from '../llm/types.js';
import { resolveInjectPayload, type PayloadRegistry } from '../payload/index.js';
import type { Journal, ThreadRecord, ThreadStore } from '../store/types.js';
import type { BudgetManager, BudgetThresholdEvent } from '../usage/budgets.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { UsageEvent } from '../usage/types.js';
import { newId } from '../util/ids.js';
import type { Logger } from '../util/logger.js';
import type { Handler, HandlerContext, HandlerLogger } from './handler.js';
import type { FailureReason } from './hooks.js';
import { JournalTrouble } from './journal-trouble.js';
import { ListenerRuntime } from './listener-runtime.js';
import type { DeliveryObservers, DeliveryOutcome, DeliveryWatch } from './observer.js';
import {
  BUDGET_SENDER,
  BUDGET_WARNING_TYPE,
  EXTERNAL_SENDER,
  SYSTEM_ERROR_TYPE,
  type Message,
} from './message.js';
import { normalizeResult, routeOutgoing, type Refused } from './routing.js';
import { isSystemName, systemErrorMessage } from './system-messages.js';
import { ThreadTracker, type LiveThread } from './thread-tracker.js';

export interface PumpLimits {
  readonly maxConcurrentHandlers: number;
  readonly maxConcurrentPerAgent: number;
  readonly maxHops: number;
  readonly maxQueue: number;
}

export interface PumpDeps {
  readonly registry: PayloadRegistry;
  readonly journal: Journal;
  readonly threads: ThreadStore;
  readonly bus: EventBus;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetManager;
  readonly llm: LlmRouter;
  readonly logger: Logger;
  /** Builds the handler of a `builtin:llm` listener. */
  readonly llmHandler: (listener: ListenerConfig) => Handler;
  readonly now?: () => number;
  /** Telemetry watching deliveries (metrics, traces). */
  readonly observers?: DeliveryObservers;
}

export interface InjectOptions {
  readonly threadId?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** When the queue is full: wait up to this long for room, then fail with "organism busy". */
  readonly waitMs?: number;
  /** Sender name; defaults to `api`. */
  readonly from?: string;
}

export interface StopOptions {
  /** How long in-flight work may take to finish. */
  readonly timeoutMs?: number;
  /** Also work off everything queued (within the timeout), not only what is in flight. */
  readonly drainQueue?: boolean;
}

export interface StopReport {
  readonly drained: boolean;
  readonly abortedInFlight: number;
  readonly leftQueued: number;
  readonly durationMs: number;
}

interface Delivery {
  readonly message: Message;
  readonly runtime: ListenerRuntime;
  readonly thread: LiveThread;
  readonly controller: AbortController;
  readonly usage: UsageEvent[];
  /** The handler has returned (or was cut short): its concurrency slot is free again. */
  handlerDone: boolean;
  readonly watch: DeliveryWatch | null;
  /** How it ended, for the watch (unset: cut short by shutdown, it stays DISPATCHED). */
  outcome: DeliveryOutcome | null;
}

/** Abort reasons the pump gives, so a delivery knows why it was cut short. */
type AbortCause = 'killed' | 'timeout' | 'shutdown';

/** A delivery's bookkeeping that failed is tried again after this long, doubling up to the max. */
const BOOKING_RETRY_MS = 250;
const BOOKING_RETRY_MAX_MS = 5_000;

/** How long one turn of the event loop may spend starting deliveries (see Pump.turnStartedAt). */
const TURN_BUDGET_MS = 4;

const SYSTEM_PAYLOADS = new Set([SYSTEM_ERROR_TYPE, BUDGET_WARNING_TYPE]);

/**
 * The message pump: routes typed messages between listeners with peer isolation, bounded
 * queues, global and per-listener concurrency limits, FIFO within a thread, and real control
 * (pause, resume, kill, stop, reload). Every delivery step is reported to the journal.
 */
export class Pump {
  private readonly runtimes = new Map<string, ListenerRuntime>();
  /** Round-robin order of the listeners; rebuilt when they change. */
  private runtimeList: ListenerRuntime[] | null = null;
  private readonly threads: ThreadTracker;
  private readonly deliveries = new Map<string, Delivery>();
  private readonly spaceWaiters = new Set<() => void>();
  private readonly drainWaiters = new Set<() => void>();
  private readonly now: () => number;
  private readonly unsubscribes: Array<() => void> = [];
  private status: OrganismStatus = 'starting';
  private dispatching = true;
  private queued = 0;
  private inFlight = 0;
  /**
   * Deliveries whose handler runs: the concurrency limits count these. A delivery whose handler
   * returned holds no slot while its ack commits (in flight until then, for stop and drain),
   * so the limits bound handler work, not the journal's commit latency.
   */
  private running = 0;
  private cursor = 0;
  private scheduled = false;
  private totalMessages = 0;
  /**
   * Deliveries start for at most TURN_BUDGET_MS per turn of the event loop, then the rest wait
   * for the next turn: handlers that return at once free their slots at once, and without a
   * bound a backlog (a recovered journal, a burst of injects) would run as one microtask chain
   * and starve HTTP, timers and the journal's commits.
   */
  private turnStartedAt: number | null = null;
  /** A turn ran out of budget with work left: the next macrotask dispatches again. */
  private turnExhausted = false;
  private readonly trouble: JournalTrouble;

  constructor(
    private deps: PumpDeps,
    private limits: PumpLimits,
    listeners: readonly ResolvedListener[],
  ) {
    this.now = deps.now ?? Date.now;
    this.trouble = new JournalTrouble(deps.logger);
    this.threads = new ThreadTracker(deps.threads, deps.bus);
    for (const l of listeners) this.register(l);
    this.unsubscribes.push(
      deps.tracker.subscribe((event) => {
        if (event.messageId) this.deliveries.get(event.messageId)?.usage.push(event);
        deps.bus.emit({ type: 'usage', usage: event });
      }),
      deps.budgets.onThreshold((e) => this.onBudgetThreshold(e)),
    );
  }

  // ---------------------------------------------------------------- lifecycle

  get organismStatus(): OrganismStatus {
    return this.status;
  }

  get messagesSinceStart(): number {
    return this.totalMessages;
  }

  get queuedCount(): number {
    return this.queued;
  }

  get inFlightCount(): number {
    return this.inFlight;
  }

  /** Starts dispatching; `recovered` are journaled messages to deliver again, in order. */
  async start(recovered: readonly Message[] = []): Promise<void> {
    // Stored threads are read before any is activated: activation queues thread writes, and a
    // read flushes the writer, so interleaving the two would commit once per recovered message.
    const storedThreads = await this.deps.threads.getMany([...new Set(recovered.map((m) => m.threadId).filter((id) => !this.threads.get(id)))]);
    for (const message of recovered) {
      const stored = this.threads.get(message.threadId) ? null : (storedThreads.get(message.threadId) ?? null);
      if (stored?.status === 'killed') {
        await this.deps.journal.failed(message, 'killed', Errors.THREAD_KILLED(message.threadId).detail, [], []);
        continue;
      }
      const thread = this.threads.activate(message.threadId, this.now(), message.metadata, stored);
      this.enqueue(message, thread, false);
    }
    await this.closeOrphanThreads();
    this.setStatus('running');
    this.schedule();
  }

  /**
   * Stops accepting messages, lets in-flight work finish (and, with `drainQueue`, queued work)
   * up to the timeout, then aborts what is left. Journaled messages that were not finished stay
   * PENDING or DISPATCHED, so a durable journal delivers them after the next start.
   */
  async stop(options: StopOptions = {}): Promise<StopReport> {
    const started = this.now();
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (this.status === 'stopped') return { drained: true, abortedInFlight: 0, leftQueued: this.queued, durationMs: 0 };
    this.setStatus('stopping');
    if (!options.drainQueue) this.dispatching = false;
    for (const wake of this.spaceWaiters) wake();
    const idle = () => this.inFlight === 0 && (!options.drainQueue || this.queued === 0);
    const drained = await this.waitFor(idle, timeoutMs);
    this.dispatching = false;
    let aborted = 0;
    for (const d of this.deliveries.values()) {
      d.controller.abort('shutdown' satisfies AbortCause);
      aborted++;
    }
    if (aborted > 0) await this.waitFor(() => this.inFlight === 0, 2_000);
    this.threads.flush();
    for (const off of this.unsubscribes) off();
    this.setStatus('stopped');
    return { drained, abortedInFlight: aborted, leftQueued: this.queued, durationMs: this.now() - started };
  }

  /**
   * A crash can leave a thread recorded `active` whose work had all finished (the thread
   * record is written behind the journal). After recovery, an active thread with nothing
   * live is done: it is settled as it would have been.
   */
  private async closeOrphanThreads(): Promise<void> {
    for (;;) {
      const page = await this.deps.threads.list({ status: 'active', limit: 500, offset: 0 });
      const orphans = page.items.filter((t) => !this.threads.get(t.id));
      for (const t of orphans) {
        const status = t.error ? 'error' : 'completed';
        this.deps.threads.put({ ...t, status });
        if (status === 'completed') this.deps.budgets.release(t.id);
      }
      if (orphans.length < 500) return;
    }
  }

  // ---------------------------------------------------------------- injection

  /** Delivers a message from outside into the pump. Returns once it is journaled. */
  async inject(
    to: string,
    body: unknown,
    options: InjectOptions = {},
  ): Promise<{ threadId: string; messageId: string }> {
    this.assertAccepting();
    const runtime = this.runtimes.get(to);
    if (!runtime) throw Errors.UNKNOWN_TARGET(to);
    const accepted = this.deps.registry.get(runtime.config.payload);
    if (!accepted) throw Errors.UNKNOWN_PAYLOAD_TYPE(runtime.config.payload);
    const { payloadType, payload } = resolveInjectPayload(body, accepted, this.deps.registry, to);

    const threadId = options.threadId ?? newId();
    const live = this.threads.get(threadId);
    // A thread id made just now is in no store: asking would flush the journal's group commit
    // once per inject (bench scenario 2).
    const stored = live || options.threadId === undefined ? null : await this.deps.threads.get(threadId);
    if ((live ?? stored)?.status === 'killed') throw Errors.THREAD_KILLED(threadId);

    await this.waitForRoom(options.waitMs ?? 0);
    this.assertAccepting();

    const metadata = { ...(live?.metadata ?? stored?.metadata ?? {}), ...(options.metadata ?? {}) };
    const message: Message = {
      id: newId(),
      threadId,
      from: options.from ?? EXTERNAL_SENDER,
      to,
      payloadType,
      payload,
      timestamp: this.now(),
      parentId: null,
      hops: 0,
      metadata,
      attempt: 1,
      traceContext: this.deps.observers?.injected() ?? null,
    };
    // Reserve the queue slot before awaiting the journal so concurrent injectors respect the bound.
    this.queued++;
    try {
      await this.deps.journal.pending([message]);
    } finally {
      this.queued--;
    }
    const thread = this.threads.activate(threadId, this.now(), metadata, stored);
    if (thread.status === 'killed') throw Errors.THREAD_KILLED(threadId);
    thread.error = null;
    thread.failed = false;
    this.enqueue(message, thread, true);
    this.schedule();
    return { threadId, messageId: message.id };
  }

  /**
   * Redelivers a journal entry an operator asked for: refusals (not accepting, thread killed)
   * come before `claim` moves the entry back to PENDING, so a refused redeliver changes nothing.
   */
  async redeliver(threadId: string, claim: () => Promise<Message>): Promise<void> {
    this.assertAccepting();
    const isKilled = async () => {
      const live = this.threads.get(threadId);
      const stored = live ? null : await this.deps.threads.get(threadId);
      return { killed: (live ?? stored)?.status === 'killed', stored };
    };
    if ((await isKilled()).killed) throw Errors.THREAD_KILLED(threadId);
    const message = await claim();
    // Killed while the entry was being claimed: it ends like any queued message of a killed thread.
    const { killed, stored } = await isKilled();
    if (killed) {
      this.failQuietly(message, 'killed', Errors.THREAD_KILLED(threadId).detail);
      throw Errors.THREAD_KILLED(threadId);
    }
    const thread = this.threads.activate(message.threadId, this.now(), message.metadata, stored);
    this.enqueue(message, thread, true);
    this.schedule();
  }

  // ---------------------------------------------------------------- control

  pauseAgent(name: string): void {
    const runtime = this.runtime(name);
    runtime.paused = true;
    this.reportState(runtime);
  }

  resumeAgent(name: string): void {
    const runtime = this.runtime(name);
    runtime.paused = false;
    runtime.lastFailed = false;
    this.reportState(runtime);
    this.schedule();
  }

  /** Aborts the thread's in-flight handlers, fails its queued messages, refuses later ones. */
  async killThread(threadId: string): Promise<ThreadRecord> {
    const live = this.threads.get(threadId);
    if (!live) {
      const stored = await this.deps.threads.get(threadId);
      if (!stored) throw Errors.THREAD_NOT_FOUND(threadId);
      // Completed, failed or killed: its status is history and stays as it was.
      if (stored.status !== 'active') throw Errors.THREAD_FINISHED(threadId);
      const record: ThreadRecord = { ...stored, status: 'killed', lastActivity: this.now() };
      this.deps.threads.put(record);
      this.deps.bus.emit({ type: 'thread_updated', thread: record });
      this.deps.budgets.release(threadId);
      return record;
    }
    live.status = 'killed';
    live.lastActivity = this.now();
    const reason = Errors.THREAD_KILLED(threadId).detail;
    for (const runtime of this.runtimes.values()) {
      const dropped = runtime.queue.drainThread(threadId);
      for (const message of dropped) {
        this.queued--;
        live.queued--;
        this.failQuietly(message, 'killed', reason);
      }
      if (dropped.length > 0) this.reportState(runtime);
    }
    this.wakeSpaceWaiters();
    for (const controller of live.controllers) controller.abort('killed' satisfies AbortCause);
    this.deps.budgets.release(threadId);
    const record = this.threads.snapshot(live);
    this.settleThread(live);
    return record;
  }

  /**
   * Applies a validated new configuration: adds, removes and updates listeners; the payload
   * registry and LLM router are swapped for the new ones.
   */
  reload(
    listeners: readonly ResolvedListener[],
    limits: PumpLimits,
    swap: Pick<PumpDeps, 'registry' | 'llm'>,
  ): Pick<ReloadResult, 'added' | 'removed' | 'updated'> {
    this.deps = { ...this.deps, ...swap };
    const next = new Map(listeners.map((l) => [l.config.name, l]));
    const added: string[] = [];
    const removed: string[] = [];
    const updated: string[] = [];
    for (const [name, runtime] of this.runtimes) {
      if (next.has(name) || isSystemName(name)) continue;
      this.runtimes.delete(name);
      this.runtimeList = null;
      removed.push(name);
      for (const message of runtime.queue.drainAll()) {
        this.queued--;
        const thread = this.threads.get(message.threadId);
        if (thread) thread.queued--;
        this.failQuietly(message, 'unknown_target', Errors.UNKNOWN_TARGET(name).detail);
        if (thread) this.settleThread(thread);
      }
    }
    for (const [name, l] of next) {
      const runtime = this.runtimes.get(name);
      if (!runtime) {
        this.register(l);
        added.push(name);
      } else if (runtime.handlerVersion !== l.handlerVersion || !sameConfig(runtime.config, l.config)) {
        runtime.config = l.config;
        runtime.handler = this.handlerFor(l);
        runtime.handlerVersion = l.handlerVersion;
        updated.push(name);
      }
    }
    this.limits = limits;
    this.schedule();
    return { added, removed, updated };
  }

  // ---------------------------------------------------------------- views

  listeners(): ListenerRuntime[] {
    return [...this.runtimes.values()];
  }

  listener(name: string): ListenerRuntime | undefined {
    return this.runtimes.get(name);
  }

  liveThread(id: string): ThreadRecord | null {
    const live = this.threads.get(id);
    return live ? this.threads.snapshot(live) : null;
  }

  get activeThreadCount(): number {
    return this.threads.activeCount;
  }

  /** Persists pending thread record changes now. */
  flushThreads(): void {
    this.threads.flush();
  }

  // ---------------------------------------------------------------- internals

  private runtime(name: string): ListenerRuntime {
    const runtime = this.runtimes.get(name);
    if (!runtime) throw Errors.AGENT_NOT_FOUND(name);
    return runtime;
  }

  private register(l: ResolvedListener): void {
    this.runtimeList = null;
    this.runtimes.set(l.config.name, new ListenerRuntime(l.config, this.handlerFor(l), l.handlerVersion));
  }

  private handlerFor(l: ResolvedListener): Handler {
    return l.handler ?? this.deps.llmHandler(l.config);
  }

  private assertAccepting(): void {
    if (this.status !== 'running' && this.status !== 'starting') throw Errors.ORGANISM_NOT_ACCEPTING(this.status);
  }

  private setStatus(status: OrganismStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.deps.bus.emit({ type: 'organism_status', status });
  }

  private async waitForRoom(waitMs: number): Promise<void> {
    if (this.queued < this.limits.maxQueue) return;
    if (waitMs <= 0 || !(await this.waitFor(() => this.queued < this.limits.maxQueue, waitMs, this.spaceWaiters))) {
      if (this.queued >= this.limits.maxQueue) throw Errors.ORGANISM_BUSY(this.limits.maxQueue);
    }
  }

  private wakeSpaceWaiters(): void {
    for (const wake of this.spaceWaiters) wake();
  }

  /** Resolves true once `condition` holds (re-checked whenever work finishes), false on timeout. */
  private waitFor(condition: () => boolean, timeoutMs: number, waiters = this.drainWaiters): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (condition() || this.status === 'stopped') {
          cleanup();
          resolve(condition());
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        resolve(condition());
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
    });
  }

  private notifyProgress(): void {
    for (const check of [...this.drainWaiters]) check();
    if (this.queued < this.limits.maxQueue) for (const check of [...this.spaceWaiters]) check();
  }

  /** Puts a journaled message on its way: to a listener's queue, or straight out to the caller. */
  private enqueue(message: Message, thread: LiveThread, fresh: boolean): void {
    this.totalMessages++;
    thread.messageCount++;
    thread.lastActivity = message.timestamp;
    if (!isSystemName(message.from)) this.threads.addParticipant(thread, message.from);
    this.threads.addParticipant(thread, message.to);
    this.threads.touch(thread);
    if (fresh) this.deps.bus.emit({ type: 'message', message, state: 'PENDING' });

    if (message.to === EXTERNAL_SENDER) {
      // Replies and errors addressed to the outside world end here: recorded, acknowledged.
      this.journalStep(() => this.deps.journal.acked(message, [], []));
      this.deps.bus.emit({ type: 'message', message, state: 'ACKED' });
      this.settleThread(thread);
      return;
    }
    const runtime = this.runtimes.get(message.to);
    if (!runtime) {
      this.failQuietly(message, 'unknown_target', Errors.UNKNOWN_TARGET(message.to).detail);
      this.settleThread(thread);
      return;
    }
    runtime.queue.push(message);
    this.queued++;
    thread.queued++;
  }

  /** True while this turn may start more deliveries; the first start of a turn opens it. */
  private inTurnBudget(): boolean {
    if (this.turnStartedAt === null) {
      this.turnStartedAt = performance.now();
      // The next macrotask closes this turn; it dispatches again only when this turn ran out
      // of budget with work left. (Scheduling unconditionally made an idle pump spin a core.)
      setImmediate(() => {
        this.turnStartedAt = null;
        if (this.turnExhausted) {
          this.turnExhausted = false;
          this.schedule();
        }
      });
      return true;
    }
    if (performance.now() - this.turnStartedAt < TURN_BUDGET_MS) return true;
    this.turnExhausted = true;
    return false;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.dispatchReady();
    });
  }

  /** Starts deliveries while there is capacity, visiting listeners round-robin. */
  private dispatchReady(): void {
    if (!this.dispatching) return;
    const list = (this.runtimeList ??= [...this.runtimes.values()]);
    let idleRounds = 0;
    while (this.running < this.limits.maxConcurrentHandlers && this.inTurnBudget() && list.length > 0 && idleRounds < list.length) {
      const runtime = list[this.cursor++ % list.length]!;
      if (runtime.paused || runtime.running >= this.limits.maxConcurrentPerAgent || !runtime.queue.hasReady()) {
        idleRounds++;
        continue;
      }
      const message = runtime.queue.take();
      if (!message) {
        idleRounds++;
        continue;
      }
      idleRounds = 0;
      this.queued--;
      void this.deliver(runtime, message);
    }
    this.notifyProgress();
  }

  private async deliver(runtime: ListenerRuntime, message: Message): Promise<void> {
    const thread = this.threads.get(message.threadId);
    if (!thread || thread.status === 'killed') {
      runtime.queue.release(message.threadId);
      this.failQuietly(message, 'killed', Errors.THREAD_KILLED(message.threadId).detail);
      return;
    }
    thread.queued--;
    thread.inFlight++;
    this.inFlight++;
    runtime.inFlight++;
    this.running++;
    runtime.running++;
    runtime.currentThread = message.threadId;
    runtime.lastActivity = this.now();
    runtime.messageCount++;
    const controller = new AbortController();
    thread.controllers.add(controller);
    const observers = this.deps.observers;
    const watch = observers?.active ? observers.started(message, runtime.config) : null;
    const delivery: Delivery = { message, runtime, thread, controller, usage: [], handlerDone: false, watch, outcome: null };
    this.deliveries.set(message.id, delivery);
    this.reportState(runtime);
    // Not retried: a lost DISPATCHED mark costs nothing (the ack moves the entry from PENDING).
    this.journalStep(() => this.deps.journal.dispatched(message), false);

    try {
      if (SYSTEM_PAYLOADS.has(message.payloadType)) {
        // System notices are recorded in the listener's history (an LLM agent sees them in its
        // next prompt) without running the handler, so they can never start a loop.
        this.handlerDone(delivery);
        if (!(await this.book(delivery, () => this.deps.journal.acked(message, [], [])))) return;
        delivery.outcome = ACKED;
        this.deps.bus.emit({ type: 'message', message, state: 'ACKED' });
      } else {
        await this.runHandler(delivery);
      }
    } catch (err) {
      this.deps.logger.error({ err, messageId: message.id }, 'delivery bookkeeping failed');
    } finally {
      watch?.end(delivery.outcome ?? { acked: false, reason: 'shutdown', error: 'the organism stopped during the delivery' });
      this.handlerDone(delivery);
      this.deliveries.delete(message.id);
      thread.controllers.delete(controller);
      thread.inFlight--;
      this.inFlight--;
      runtime.inFlight--;
      if (runtime.inFlight === 0) runtime.currentThread = null;
      runtime.lastActivity = this.now();
      runtime.queue.release(message.threadId);
      this.reportState(runtime);
      this.settleThread(thread);
      this.schedule();
      this.notifyProgress();
    }
  }

  private async runHandler(d: Delivery): Promise<void> {
    const { message, runtime, thread, controller } = d;
    const timeoutMs = runtime.config.timeoutSeconds * 1000;
    const timer = setTimeout(() => controller.abort('timeout' satisfies AbortCause), timeoutMs);
    let outcome: { ok: true; result: unknown } | { ok: false; error: unknown };
    try {
      const aborted = new Promise<never>((_, reject) => {
        if (controller.signal.aborted) reject(controller.signal.reason);
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      });
      aborted.catch(() => {});
      const handle = () => runtime.handler(message.payload, this.context(d));
      const run = Promise.resolve().then(d.watch ? () => d.watch!.run(handle) : handle);
      outcome = { ok: true, result: await Promise.race([run, aborted]) };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      clearTimeout(timer);
    }
    this.handlerDone(d);

    const cause = controller.signal.aborted ? (controller.signal.reason as AbortCause) : null;
    if (cause === 'shutdown') return; // stays DISPATCHED: a durable journal redelivers it after restart
    if (cause === 'killed' || thread.status === 'killed') {
      await this.fail(d, 'killed', Errors.THREAD_KILLED(thread.id).detail, null);
      return;
    }
    if (cause === 'timeout') {
      await this.fail(d, 'timeout', Errors.HANDLER_TIMEOUT(runtime.name, timeoutMs).detail, message.from);
      return;
    }
    if (!outcome.ok) {
      if (Errors.BUDGET_EXHAUSTED.is(outcome.error)) {
        thread.error = outcome.error.detail;
        await this.fail(d, 'budget_exhausted', outcome.error.detail, runtime.name);
        return;
      }
      const text = outcome.error instanceof OrganismError ? outcome.error.detail : errorText(outcome.error);
      await this.fail(d, 'handler_error', Errors.HANDLER_FAILED(runtime.name, text).detail, message.from);
      return;
    }
    const normalized = normalizeResult(outcome.result);
    const routed = normalized.ok
      ? routeOutgoing(normalized.items, {
          sender: runtime.config,
          cause: message,
          maxHops: this.limits.maxHops,
          now: this.now(),
          registry: this.deps.registry,
          acceptedType: (name) => this.runtimes.get(name)?.config.payload,
        })
      : ({ ok: false, error: normalized.error } as const);
    if (!routed.ok) {
      await this.fail(d, 'invalid_result', Errors.INVALID_RESULT(runtime.name, routed.error).detail, message.from);
      return;
    }
    const notices = routed.refused.map((r) =>
      systemErrorMessage(message, runtime.name, r.reason, r.error, this.now(), { messageId: r.message.id, to: r.message.to }),
    );
    const outgoing = traced([...routed.messages, ...notices], d.watch);
    if (!(await this.book(d, () => this.deps.journal.acked(message, outgoing, d.usage)))) return;
    d.outcome = ACKED;
    runtime.lastFailed = false;
    this.deps.bus.emit({ type: 'message', message, state: 'ACKED' });
    for (const r of routed.refused) {
      this.refuse(r);
      // A refused message is a fault of the conversation: the thread ends in `error`.
      thread.failed = true;
      thread.error ??= r.error;
    }
    for (const m of outgoing) this.enqueue(m, thread, true);
  }

  /** Frees the delivery's concurrency slot once (the rest of it waits for the journal). */
  private handlerDone(d: Delivery): void {
    if (d.handlerDone) return;
    d.handlerDone = true;
    this.running--;
    d.runtime.running--;
    this.schedule();
  }

  /** Ends a delivery as FAILED and tells `notify` (if any) why with a SystemError. */
  private async fail(d: Delivery, reason: FailureReason, error: string, notify: string | null): Promise<void> {
    const { message, runtime, thread } = d;
    runtime.lastFailed = reason !== 'killed';
    if (reason !== 'killed') {
      thread.failed = true;
      thread.error ??= error;
    }
    const target = notify !== null && !isSystemName(notify) && thread.status !== 'killed' ? notify : null;
    const notice = target ? traced([systemErrorMessage(message, target, reason, error, this.now())], d.watch) : [];
    if (!(await this.book(d, () => this.deps.journal.failed(message, reason, error, notice, d.usage)))) return;
    d.outcome = { acked: false, reason, error };
    this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    this.deps.bus.emit({ type: 'journal_failed', message, reason, error });
    this.deps.logger.warn({ messageId: message.id, threadId: message.threadId, to: message.to, reason }, error);
    for (const m of notice) this.enqueue(m, thread, true);
  }

  /** Audits a message the pump refused to deliver. */
  private refuse(r: Refused): void {
    const { message } = r;
    if (r.reason === 'peer_denied') {
      this.deps.bus.emit({
        type: 'peer_denied',
        from: message.from,
        to: message.to,
        threadId: message.threadId,
        messageId: message.id,
        reason: r.error,
      });
      this.deps.logger.warn({ from: message.from, to: message.to, threadId: message.threadId, audit: 'peer_denied' }, r.error);
    }
    this.journalStep(async () => {
      await this.deps.journal.pending([message]);
      await this.deps.journal.failed(message, r.reason, r.error, [], []);
    });
    this.deps.bus.emit({ type: 'journal_failed', message, reason: r.reason, error: r.error });
  }

  /** Fails a message that never reached a handler (dropped from a queue). */
  private failQuietly(message: Message, reason: FailureReason, error: string): void {
    this.journalStep(() => this.deps.journal.failed(message, reason, error, [], []));
    this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    this.deps.bus.emit({ type: 'journal_failed', message, reason, error });
  }

  /**
   * Writes a delivery's outcome (its ack or failure) to the journal, trying again with backoff
   * until it commits: a write refused (a full disk) must not leave the entry DISPATCHED with
   * nobody working on it. The delivery stays in flight meanwhile (its thread's next message
   * waits; its handler's slot is free). False when a shutdown aborted it first: the entry
   * stays in the journal and the next start delivers it again.
   */
  private async book(d: Delivery | null, write: () => void | Promise<void>): Promise<boolean> {
    const signal = d?.controller.signal ?? null;
    const givenUp = () => (signal ? signal.aborted && signal.reason === 'shutdown' : this.status === 'stopped');
    for (let delay = BOOKING_RETRY_MS; ; delay = Math.min(delay * 2, BOOKING_RETRY_MAX_MS)) {
      try {
        await write();
        this.trouble.succeeded();
        return true;
      } catch (err) {
        this.trouble.failed(err);
      }
      if (givenUp()) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', wake);
          resolve();
        }, delay);
        if (!d) timer.unref(); // nobody waits for it: it must not hold a stopping process up
        signal?.addEventListener('abort', wake, { once: true });
      });
      if (givenUp()) return false;
    }
  }

  /** A journal write nobody waits for; retried like a delivery's bookkeeping unless `retry` is false. */
  private journalStep(step: () => void | Promise<void>, retry = true): void {
    if (retry) {
      void this.book(null, step);
      return;
    }
    const failed = (err: unknown) => this.trouble.failed(err);
    try {
      const r = step();
      if (r) r.then(() => this.trouble.succeeded(), failed);
    } catch (err) {
      failed(err);
    }
  }

  /** A thread with nothing queued or in flight is done: completed, error or killed. */
  private settleThread(thread: LiveThread): void {
    this.threads.touch(thread);
    if (thread.status !== 'killed' && (thread.queued > 0 || thread.inFlight > 0)) return;
    if (thread.status === 'killed') {
      if (thread.inFlight === 0) this.threads.retire(thread);
      return;
    }
    thread.status = thread.failed ? 'error' : 'completed';
    thread.lastActivity = this.now();
    // An exhausted or failed thread keeps its budget (an operator may raise it and go on).
    if (thread.status === 'completed') this.deps.budgets.release(thread.id);
    this.threads.retire(thread);
  }

  private onBudgetThreshold(e: BudgetThresholdEvent): void {
    this.deps.bus.emit({
      type: 'budget_warning',
      threadId: e.threadId,
      agent: e.agent,
      severity: e.severity,
      threshold: e.threshold,
      percentUsed: e.percentUsed,
      tokensUsed: e.tokensUsed,
      tokensRemaining: e.tokensRemaining,
      maxTokens: e.maxTokens,
    });
    const thread = this.threads.get(e.threadId);
    if (!thread || thread.status === 'killed' || !this.runtimes.has(e.agent)) return;
    const parent = [...this.deliveries.values()].find((d) => d.thread === thread && d.runtime.name === e.agent);
    const warning: Message = {
      id: newId(),
      threadId: e.threadId,
      from: BUDGET_SENDER,
      to: e.agent,
      payloadType: BUDGET_WARNING_TYPE,
      payload: {
        percentUsed: e.percentUsed,
        tokensUsed: e.tokensUsed,
        tokensRemaining: e.tokensRemaining,
        maxTokens: e.maxTokens,
        severity: e.severity,
        message: e.message,
      },
      timestamp: this.now(),
      parentId: parent?.message.id ?? null,
      hops: parent ? parent.message.hops + 1 : 0,
      metadata: thread.metadata,
      attempt: 1,
      traceContext: parent?.watch?.traceContext ?? null,
    };
    // Journaled PENDING first (durable), then queued for the agent.
    thread.queued++; // hold the thread open while the warning is being journaled
    void Promise.resolve(this.deps.journal.pending([warning]))
      .then(() => {
        thread.queued--;
        if (thread.status === 'killed') return this.settleThread(thread);
        this.enqueue(warning, thread, true);
        this.schedule();
      })
      .catch((err: unknown) => {
        thread.queued--;
        this.deps.logger.error({ err }, 'journal write failed');
        this.settleThread(thread);
      });
  }

  private reportState(runtime: ListenerRuntime): void {
    const state: AgentState = runtime.state;
    if (state === runtime.reportedState) return;
    runtime.reportedState = state;
    this.deps.bus.emit({ type: 'agent_state', agent: runtime.name, state, currentThread: runtime.currentThread });
  }

  private context(d: Delivery): HandlerContext {
    const { message, runtime, controller } = d;
    const bound = this.deps.llm.bind(
      {
        threadId: message.threadId,
        agent: runtime.name,
        messageId: message.id,
        metadata: { ...message.metadata },
        signal: controller.signal,
        // Token deltas go to live watchers only: never journaled.
        onDelta: (callId, text) =>
          this.deps.bus.emit({ type: 'llm_delta', threadId: message.threadId, messageId: message.id, agent: runtime.name, callId, text }),
      },
      { model: runtime.config.model, maxOutputTokens: runtime.config.maxOutputTokens },
    );
    const llm: BoundLlmClient = {
      complete: async (request) => {
        runtime.waiting++;
        this.reportState(runtime);
        try {
          return await bound.complete(request);
        } finally {
          runtime.waiting--;
          this.reportState(runtime);
        }
      },
    };
    return {
      threadId: message.threadId,
      messageId: message.id,
      from: message.from,
      self: runtime.name,
      payloadType: message.payloadType,
      attempt: message.attempt,
      metadata: message.metadata,
      signal: controller.signal,
      llm,
      log: handlerLogger(this.deps.logger, runtime.name, message),
      peers: runtime.config.peers,
      history: (limit = 50) => this.deps.journal.threadHistory(message.threadId, runtime.name, limit),
    };
  }
}

const ACKED: DeliveryOutcome = { acked: true };

/** Messages a delivery sends carry its trace context (when a tracer gave it one). */
function traced(messages: Message[], watch: DeliveryWatch | null): Message[] {
  const traceContext = watch?.traceContext ?? null;
  return traceContext === null ? messages : messages.map((m) => ({ ...m, traceContext }));
}

function sameConfig(a: ListenerConfig, b: ListenerConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function handlerLogger(logger: Logger, listener: string, message: Message): HandlerLogger {
  const child = logger.child({ listener, threadId: message.threadId, messageId: message.id });
  return {
    debug: (msg, data) => child.debug(data ?? {}, msg),
    info: (msg, data) => child.info(data ?? {}, msg),
    warn: (msg, data) => child.warn(data ?? {}, msg),
    error: (msg, data) => child.error(data ?? {}, msg),
  };
}
