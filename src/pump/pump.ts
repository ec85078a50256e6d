import type { ApprovalDecision } from '../core/approval.js';
import { acceptedTypes } from '../config/accepted-types.js';
import type { ResolvedListener } from '../config/types.js';
import { EXTERNAL_SENDER, isSystemName, type Message } from '../core/message.js';
import type { QueueHost } from '../core/queue.js';
import type { ThreadRecord } from '../core/thread.js';
import type { AskClosing, JournalEntry } from '../core/journal.js';
import { Errors } from '../errors/catalogue.js';
import type { OrganismStatus, ReloadResult } from '../events/types.js';
import { assertStorableInject, resolveInjectPayload } from '../payload/index.js';
import { newId } from '../util/ids.js';
import { Admission } from './admission.js';
import { Bookkeeping } from './bookkeeping.js';
import { BudgetNotices } from './budget-notices.js';
import { Control, type StopOptions, type StopReport } from './control.js';
import { Deliveries } from './delivery.js';
import { Intake } from './intake.js';
import type { ListenerRuntime } from './listener-runtime.js';
import { Outcomes } from './outcomes.js';
import { PumpState, type PumpDeps, type PumpLimits } from './state.js';
import { ThreadLifecycle } from './thread-lifecycle.js';

export type { PumpDeps, PumpLimits } from './state.js';
export type { StopOptions, StopReport } from './control.js';

export interface InjectOptions {
  readonly threadId?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** When the queue is full: wait up to this long for room, then fail with "organism busy". */
  readonly waitMs?: number;
  /** Sender name; defaults to `api`. */
  readonly from?: string;
  /** The caller's W3C traceparent (the HTTP request's span): tracing links the thread's root delivery to it. */
  readonly traceContext?: string | null;
  /** A fork's message (issue 29): the one it answers and its hops, as in the source thread. */
  readonly parentId?: string | null;
  readonly hops?: number;
  /**
   * A fork's history (issue 29): messages journaled as delivered (ACKED) in the new thread before
   * this one, in order (ids made by the caller, older than this message's).
   */
  readonly history?: readonly Message[];
}

/**
 * The message pump: routes typed messages between listeners with peer isolation, bounded
 * queues, global and per-listener concurrency limits, FIFO within a thread, and real control
 * (pause, resume, kill, stop, reload). Every delivery step is reported to the journal.
 *
 * It is composed of parts with one job each, sharing one state object, none extending another;
 * an inject goes through them in this order:
 * - state.ts: what every part reads (listeners, live threads and deliveries, counters, status);
 * - admission.ts: room in the bounded queue (back-pressure), and waiting for work to finish;
 * - intake.ts: a journaled message put on its way (the queue places it);
 * - the DeliveryQueue (core/queue.ts; embedded or cluster) hands out what may start: `take`;
 * - delivery.ts: the delivery of one message (handler, context, routing of its result);
 * - outcomes.ts: its ack or failure written through the queue (bookkeeping.ts retries the writes);
 * - thread-lifecycle.ts: threads settled, killed, or closed after a crash;
 * - budget-notices.ts: BudgetWarnings when a thread's budget crosses a threshold;
 * - control.ts: start, stop, pause, resume, reload;
 * - this class: the facade (inject and redeliver, the views) and the wiring.
 */
export class Pump {
  private readonly state: PumpState;
  private readonly admission: Admission;
  private readonly intake: Intake;
  private readonly lifecycle: ThreadLifecycle;
  private readonly outcomes: Outcomes;
  private readonly control: Control;

  constructor(deps: PumpDeps, limits: PumpLimits, listeners: readonly ResolvedListener[]) {
    const state = (this.state = new PumpState(deps, limits));
    const books = new Bookkeeping(state);
    this.admission = new Admission(state);
    this.outcomes = new Outcomes(state, books);
    this.lifecycle = new ThreadLifecycle(state, this.outcomes, this.admission);
    this.intake = new Intake(state, books, this.outcomes, this.lifecycle);
    const deliveries = new Deliveries(state, books, this.outcomes, this.lifecycle, this.intake, this.admission);
    const notices = new BudgetNotices(state, this.intake, this.lifecycle);
    this.control = new Control(state, this.admission, this.outcomes, this.lifecycle, this.intake);
    for (const l of listeners) state.register(l);
    const host: QueueHost = {
      listeners: () => state.listenerOrder(),
      listener: (name) => state.listeners.get(name),
      limits: () => state.limits,
      running: () => state.running,
      inFlight: () => state.inFlight,
      dispatching: () => state.dispatching,
      status: () => state.status,
      take: (message, claim) => deliveries.take(message, claim),
      held: () => state.deliveries.keys(),
      progress: () => this.admission.notifyProgress(),
      liveThreads: () => state.threads.activeCount,
      takenBack: (taken) => {
        for (const t of taken) deps.bus.emit({ type: 'deliveries_taken_back', worker: t.worker, name: t.name, retried: t.retried, failed: t.failed });
      },
      logger: deps.logger,
    };
    deps.queue.open(host);
    state.unsubscribes.push(
      deps.tracker.subscribe((event) => {
        if (event.messageId) state.deliveries.get(event.messageId)?.usage.push(event);
        deps.bus.emit({ type: 'usage', usage: event });
      }),
      deps.budgets.onThreshold((e) => notices.onThreshold(e)),
    );
  }

  get organismStatus(): OrganismStatus {
    return this.state.status;
  }

  get messagesSinceStart(): number {
    return this.state.totalMessages;
  }

  get queuedCount(): number {
    return this.state.queued;
  }

  get inFlightCount(): number {
    return this.state.inFlight;
  }

  // ---------------------------------------------------------------- controls

  start(recovered: readonly Message[] = []): Promise<void> {
    return this.control.start(recovered);
  }

  stop(options: StopOptions = {}): Promise<StopReport> {
    return this.control.stop(options);
  }

  pauseListener(name: string): void {
    this.control.pause(name);
  }

  resumeListener(name: string): void {
    this.control.resume(name);
  }

  reload(...args: Parameters<Control['reload']>): Pick<ReloadResult, 'added' | 'removed' | 'updated'> {
    return this.control.reload(...args);
  }

  killThread(threadId: string): Promise<ThreadRecord> {
    return this.lifecycle.kill(threadId);
  }

  /** Holds or resumes a thread's deliveries (issue 30): nothing in flight is interrupted; what waits stays waiting. */
  holdThread(threadId: string, held: boolean): void {
    this.state.deps.queue.hold(threadId, held);
    if (!held) this.state.deps.queue.schedule();
  }

  /** Another process killed the thread: what of it runs or waits here ends as in a local kill. False when nothing of it is here. */
  killThreadHere(threadId: string): boolean {
    return this.lifecycle.killHere(threadId);
  }

  // ---------------------------------------------------------------- injection

  /** Delivers a message from outside into the pump. Returns once it is journaled. */
  async inject(to: string, body: unknown, options: InjectOptions = {}): Promise<{ threadId: string; messageId: string }> {
    const { state } = this;
    const { deps, threads } = state;
    this.assertAccepting();
    assertStorableInject(to, body, options.threadId, options.metadata);
    const runtime = state.listeners.get(to);
    if (!runtime) throw Errors.UNKNOWN_TARGET(to);
    const accepted = acceptedTypes(runtime.config).map((name) => deps.registry.get(name) ?? unknownType(name));
    const { payloadType, payload } = resolveInjectPayload(body, accepted, deps.registry, to);

    const threadId = options.threadId ?? newId();
    const live = threads.get(threadId);
    // A thread id made just now is in no store: asking would flush the journal's group commit
    // once per inject (bench scenario 2).
    const stored = live || options.threadId === undefined ? null : await deps.threads.get(threadId);
    if ((live ?? stored)?.status === 'killed' || threads.wasKilled(threadId)) throw Errors.THREAD_KILLED(threadId);

    await this.admission.waitForRoom(options.waitMs ?? 0);
    this.assertAccepting();

    const metadata = { ...(live?.metadata ?? stored?.metadata ?? {}), ...(options.metadata ?? {}) };
    const history = options.history ?? [];
    for (const h of history) {
      // Journaled as delivered in one write (an ack of an entry never journaled inserts it):
      // what a fork starts from, never claimed nor delivered again.
      await deps.journal.acked(h, [], []);
    }
    const message: Message = {
      id: newId(),
      threadId,
      from: options.from ?? EXTERNAL_SENDER,
      to,
      payloadType,
      payload: deps.payloadRedactor?.()?.value(payload) ?? payload,
      timestamp: state.now(),
      parentId: options.parentId ?? null,
      hops: options.hops ?? 0,
      metadata,
      attempt: 1,
      traceContext: deps.observers?.injected(options.traceContext ?? null) ?? null,
    };
    // Reserve the queue slot before awaiting the journal so concurrent injectors respect the bound.
    state.queued++;
    try {
      await this.admission.admit(message, options.waitMs ?? 0);
    } finally {
      state.queued--;
    }
    const thread = threads.activate(threadId, state.now(), metadata, stored);
    if (thread.status === 'killed') {
      // Killed while the message was being journaled: it ends as the killed thread's queued
      // ones do (or its claimer refuses it, as the queue says), and the thread is not revived.
      if (deps.queue.abandon(message)) this.outcomes.failQuietly(message, 'killed', Errors.THREAD_KILLED(threadId).detail);
      this.lifecycle.settle(thread);
      throw Errors.THREAD_KILLED(threadId);
    }
    thread.error = null;
    thread.failed = false;
    for (const h of history) {
      thread.messageCount++;
      if (!isSystemName(h.from)) threads.addParticipant(thread, h.from);
      threads.addParticipant(thread, h.to);
    }
    this.intake.enqueue(message, thread, true);
    deps.queue.schedule();
    return { threadId, messageId: message.id };
  }

  /**
   * Redelivers a journal entry an operator asked for: refusals (not accepting, thread killed)
   * come before `claim` moves the entry back to PENDING, so a refused redeliver changes nothing.
   */
  async redeliver(threadId: string, claim: () => Promise<Message>): Promise<void> {
    this.assertAccepting();
    const { deps, threads } = this.state;
    const isKilled = async () => {
      const live = threads.get(threadId);
      const stored = live ? null : await deps.threads.get(threadId);
      return { killed: (live ?? stored)?.status === 'killed' || threads.wasKilled(threadId), stored };
    };
    if ((await isKilled()).killed) throw Errors.THREAD_KILLED(threadId);
    const message = await claim();
    // Killed while the entry was being claimed: it ends like any queued message of a killed thread.
    const { killed, stored } = await isKilled();
    if (killed) {
      this.outcomes.failQuietly(message, 'killed', Errors.THREAD_KILLED(threadId).detail);
      throw Errors.THREAD_KILLED(threadId);
    }
    const thread = threads.activate(message.threadId, this.state.now(), message.metadata, stored);
    this.intake.enqueue(message, thread, true);
    deps.queue.schedule();
  }

  // ---------------------------------------------------------------- asks (builtin:human)

  /** Open asks as the store holds them (at start): their threads settle as `waiting`. */
  knowAsks(entries: readonly JournalEntry[]): void {
    for (const e of entries) this.rememberAsk(e.message.threadId, e.message.id);
  }

  /** An ask parked by another process (cluster mode: its thread's record is the store's anyway). */
  rememberAsk(threadId: string, messageId: string): void {
    const { asks } = this.state;
    let open = asks.get(threadId);
    if (!open) asks.set(threadId, (open = new Set()));
    open.add(messageId);
  }

  /** An ask another process closed (cluster mode): no longer open here. */
  forgetAsk(threadId: string, messageId: string): void {
    const open = this.state.asks.get(threadId);
    open?.delete(messageId);
    if (open?.size === 0) this.state.asks.delete(threadId);
  }

  /**
   * Closes an open ask (answered, rejected, expired, its thread killed): the store's conditional
   * AWAITING -> ACKED/FAILED with what the close sends, in one transaction; then what it sent
   * goes on its way and the thread goes on (or settles). False: it was already closed (the
   * first close wins), nothing was written.
   */
  /**
   * Decides a pending approval: the store's conditional AWAITING -> PENDING with the decision
   * (durable before anything runs); then the delivery is placed again and its continuation
   * (the tool agent reading the decision) runs it. False: already decided or closed.
   */
  async decideApproval(entry: JournalEntry, decision: ApprovalDecision): Promise<boolean> {
    const { deps, threads } = this.state;
    const message = entry.message;
    if (!(await deps.journal.decideApproval(message.id, decision))) return false;
    this.forgetAsk(message.threadId, message.id);
    if (threads.wasKilled(message.threadId)) return true;
    const live = threads.get(message.threadId);
    const stored = live ? null : await deps.threads.get(message.threadId);
    if (stored?.status === 'killed') return true;
    const thread = threads.activate(message.threadId, this.state.now(), message.metadata, stored);
    this.intake.requeue(message, thread);
    this.lifecycle.settle(thread);
    deps.queue.schedule();
    return true;
  }

  async closeAsk(entry: JournalEntry, closing: AskClosing): Promise<boolean> {
    const { deps, threads } = this.state;
    const ask = entry.message;
    if (!(await deps.journal.closeAsk(ask.id, closing))) return false;
    this.forgetAsk(ask.threadId, ask.id);
    deps.bus.emit({ type: 'message', message: ask, state: closing.state });
    if (closing.state === 'FAILED' && closing.reason) deps.bus.emit({ type: 'journal_failed', message: ask, reason: closing.reason, error: closing.error ?? closing.reason });
    if (closing.reason === 'killed' || threads.wasKilled(ask.threadId)) return true;
    const live = threads.get(ask.threadId);
    const stored = live ? null : await deps.threads.get(ask.threadId);
    if (stored?.status === 'killed') return true;
    const thread = threads.activate(ask.threadId, this.state.now(), ask.metadata, stored);
    if (closing.state === 'FAILED' && closing.error !== null) {
      thread.failed = true;
      thread.error ??= closing.error;
    }
    for (const m of closing.outgoing) this.intake.enqueue(m, thread, true);
    this.lifecycle.settle(thread);
    deps.queue.schedule();
    return true;
  }

  // ---------------------------------------------------------------- views

  listeners(): ListenerRuntime[] {
    return [...this.state.listeners.values()];
  }

  listener(name: string): ListenerRuntime | undefined {
    return this.state.listeners.get(name);
  }

  /** Messages waiting in this process for a listener. */
  queueDepth(name: string): number {
    return this.state.deps.queue.depth(name);
  }

  liveThread(id: string): ThreadRecord | null {
    const { threads } = this.state;
    const live = threads.get(id);
    return live ? threads.snapshot(live) : null;
  }

  /** Ids of the threads with work queued or in flight in this process. */
  liveThreadIds(): string[] {
    return [...this.state.threads.liveThreads()].map((t) => t.id);
  }

  get activeThreadCount(): number {
    return this.state.threads.activeCount;
  }

  /** Persists pending thread record changes now. */
  flushThreads(): void {
    this.state.threads.flush();
  }

  private assertAccepting(): void {
    const { status } = this.state;
    if (status !== 'running' && status !== 'starting') throw Errors.ORGANISM_NOT_ACCEPTING(status);
  }
}

function unknownType(name: string): never {
  throw Errors.UNKNOWN_PAYLOAD_TYPE(name);
}
