import type { ResolvedListener } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import type { OrganismStatus } from '../events/types.js';
import { assertStorableInject, resolveInjectPayload } from '../payload/index.js';
import type { ThreadRecord } from '../core/thread.js';
import { newId } from '../util/ids.js';
import { PumpControl } from './control.js';
import type { ListenerRuntime } from './listener-runtime.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';
import type { PumpDeps, PumpLimits } from './pump-state.js';

export type { PumpDeps, PumpLimits } from './pump-state.js';
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
}

/**
 * The message pump: routes typed messages between listeners with peer isolation, bounded
 * queues, global and per-listener concurrency limits, FIFO within a thread, and real control
 * (pause, resume, kill, stop, reload). Every delivery step is reported to the journal.
 *
 * It is built in layers, each a module with one job, each on top of the one before:
 * - pump-state.ts: what every layer shares (listeners, live threads, counters, status);
 * - back-pressure.ts: waiting for room in the queue, and for work to finish;
 * - journal-bookkeeping.ts: writing acks and failures to the journal, retried until they commit;
 * - thread-lifecycle.ts: settling, killing and closing threads;
 * - dispatch.ts: queueing messages and starting deliveries within the limits and turn budget;
 * - shared-dispatch.ts: in shared mode, claiming deliveries from the store instead (work-source.ts);
 * - delivery.ts: the delivery of one message (handler, context, routing of its result);
 * - budget-notices.ts: BudgetWarnings when a thread's budget crosses a threshold;
 * - control.ts: start, stop, pause, resume, reload;
 * - this class: the facade (construction, inject and redeliver, the views).
 */
export class Pump extends PumpControl {
  constructor(deps: PumpDeps, limits: PumpLimits, listeners: readonly ResolvedListener[]) {
    super(deps, limits);
    for (const l of listeners) this.register(l);
    this.unsubscribes.push(
      deps.tracker.subscribe((event) => {
        if (event.messageId) this.deliveries.get(event.messageId)?.usage.push(event);
        deps.bus.emit({ type: 'usage', usage: event });
      }),
      deps.budgets.onThreshold((e) => this.onBudgetThreshold(e)),
    );
  }

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

  // ---------------------------------------------------------------- injection

  /** Delivers a message from outside into the pump. Returns once it is journaled. */
  async inject(
    to: string,
    body: unknown,
    options: InjectOptions = {},
  ): Promise<{ threadId: string; messageId: string }> {
    this.assertAccepting();
    assertStorableInject(to, body, options.threadId, options.metadata);
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
    if ((live ?? stored)?.status === 'killed' || this.threads.wasKilled(threadId)) throw Errors.THREAD_KILLED(threadId);

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
      traceContext: this.deps.observers?.injected(options.traceContext ?? null) ?? null,
    };
    // Reserve the queue slot before awaiting the journal so concurrent injectors respect the bound.
    this.queued++;
    try {
      // Shared mode: the queue is every process's PENDING entries, bounded where they are written.
      if (this.deps.work) await this.admitShared(this.deps.work, message, options.waitMs ?? 0);
      else await this.deps.journal.pending([message]);
    } finally {
      this.queued--;
    }
    const thread = this.threads.activate(threadId, this.now(), metadata, stored);
    if (thread.status === 'killed') {
      // Killed while the message was being journaled: it ends as the killed thread's queued
      // ones do (shared mode: its claimer refuses it), and the thread is not revived.
      if (!this.deps.work) this.failQuietly(message, 'killed', Errors.THREAD_KILLED(threadId).detail);
      this.settleThread(thread);
      throw Errors.THREAD_KILLED(threadId);
    }
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
      return { killed: (live ?? stored)?.status === 'killed' || this.threads.wasKilled(threadId), stored };
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

  /** Ids of the threads with work queued or in flight in this process. */
  liveThreadIds(): string[] {
    return [...this.threads.liveThreads()].map((t) => t.id);
  }

  get activeThreadCount(): number {
    return this.threads.activeCount;
  }

  /** Persists pending thread record changes now. */
  flushThreads(): void {
    this.threads.flush();
  }

  private assertAccepting(): void {
    if (this.status !== 'running' && this.status !== 'starting') throw Errors.ORGANISM_NOT_ACCEPTING(this.status);
  }
}
