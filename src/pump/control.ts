import type { ListenerConfig, ResolvedListener } from '../config/types.js';
import type { Message } from '../core/message.js';
import { Errors } from '../errors/catalogue.js';
import type { ReloadResult } from '../events/types.js';
import type { Admission } from './admission.js';
import type { Intake } from './intake.js';
import type { ListenerRuntime } from './listener-runtime.js';
import type { Outcomes } from './outcomes.js';
import type { PumpDeps, PumpLimits, PumpState } from './state.js';
import { isSystemName } from '../core/message.js';
import type { ThreadLifecycle } from './thread-lifecycle.js';

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

/**
 * The organism's controls: start (with the recovered messages), stop (draining or not),
 * pause and resume a listener, reload the configuration.
 */
export class Control {
  constructor(
    private readonly state: PumpState,
    private readonly admission: Admission,
    private readonly outcomes: Outcomes,
    private readonly lifecycle: ThreadLifecycle,
    private readonly intake: Intake,
  ) {}

  /** Starts dispatching; `recovered` are journaled messages to deliver again, in order. */
  async start(recovered: readonly Message[] = []): Promise<void> {
    const { state } = this;
    const { threads, deps } = state;
    // Stored threads are read before any is activated: activation queues thread writes, and a
    // read flushes the writer, so interleaving the two would commit once per recovered message.
    const storedThreads = await deps.threads.getMany([...new Set(recovered.map((m) => m.threadId).filter((id) => !threads.get(id)))]);
    // Recovery goes on with the conversation the crash interrupted, not a new one: a failure
    // before the crash still ends the thread in error once its work drains. Read (like the
    // stored threads) before anything is activated, and marked before its first message is
    // enqueued: a message to the caller settles the thread at once.
    const failures = new Map<string, string>();
    const unread: string[] = [];
    for (const id of new Set(recovered.map((m) => m.threadId))) {
      if (threads.get(id) || storedThreads.get(id)?.status === 'killed') continue;
      const error = storedThreads.get(id)?.error ?? null;
      if (error !== null) failures.set(id, error);
      else unread.push(id);
    }
    // The walk back to the latest inject, for the threads with a failure at all: one read for
    // them all first (a walk per thread took 0.7 s of a boot resuming 10,000 threads).
    const failed = await deps.journal.failedThreads(unread);
    for (const id of unread) {
      const error = failed.has(id) ? await this.lifecycle.failureSinceInject(id) : null;
      if (error !== null) failures.set(id, error);
    }
    for (const message of recovered) {
      const stored = threads.get(message.threadId) ? null : (storedThreads.get(message.threadId) ?? null);
      if (stored?.status === 'killed') {
        await deps.journal.failed(message, 'killed', Errors.THREAD_KILLED(message.threadId).detail, [], []);
        continue;
      }
      const fresh = !threads.get(message.threadId);
      const thread = threads.activate(message.threadId, state.now(), message.metadata, stored);
      const error = fresh ? failures.get(thread.id) : undefined;
      if (error !== undefined) {
        thread.failed = true;
        thread.error = error;
      }
      this.intake.enqueue(message, thread, false);
    }
    await this.lifecycle.closeOrphans();
    state.setStatus('running');
    deps.queue.schedule();
  }

  /**
   * Stops accepting messages, lets in-flight work finish (and, with `drainQueue`, queued work)
   * up to the timeout, then aborts what is left. Journaled messages that were not finished stay
   * PENDING or DISPATCHED, so a durable journal delivers them after the next start.
   */
  async stop(options: StopOptions = {}): Promise<StopReport> {
    const { state, admission } = this;
    const started = state.now();
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (state.status === 'stopped') return { drained: true, abortedInFlight: 0, leftQueued: state.queued, durationMs: 0 };
    state.setStatus('stopping');
    if (!options.drainQueue) state.dispatching = false;
    admission.wakeSpaceWaiters();
    const idle = () => state.inFlight === 0 && (!options.drainQueue || state.queued === 0);
    const drained = await admission.waitFor(idle, timeoutMs);
    state.dispatching = false;
    let aborted = 0;
    for (const d of state.deliveries.values()) {
      d.cancellation.abort('shutdown');
      aborted++;
    }
    if (aborted > 0) await admission.waitFor(() => state.inFlight === 0, 2_000);
    state.threads.flush();
    for (const off of state.unsubscribes) off();
    state.deps.queue.close();
    state.setStatus('stopped');
    return { drained, abortedInFlight: aborted, leftQueued: state.queued, durationMs: state.now() - started };
  }

  pause(name: string): void {
    const runtime = this.listener(name);
    runtime.paused = true;
    this.state.reportState(runtime);
  }

  resume(name: string): void {
    const runtime = this.listener(name);
    runtime.paused = false;
    runtime.lastFailed = false;
    this.state.reportState(runtime);
    this.state.deps.queue.schedule();
  }

  /**
   * Applies a validated new configuration: adds, removes and updates listeners; the payload
   * registry and LLM router are swapped for the new ones.
   */
  reload(listeners: readonly ResolvedListener[], limits: PumpLimits, swap: Pick<PumpDeps, 'registry' | 'llm'>): Pick<ReloadResult, 'added' | 'removed' | 'updated'> {
    const { state } = this;
    state.deps = { ...state.deps, ...swap };
    const next = new Map(listeners.map((l) => [l.config.name, l]));
    const added: string[] = [];
    const removed: string[] = [];
    const updated: string[] = [];
    for (const name of [...state.listeners.keys()]) {
      if (next.has(name) || isSystemName(name)) continue;
      state.unregister(name);
      removed.push(name);
      for (const message of state.deps.queue.drainListener(name)) {
        state.queued--;
        const thread = state.threads.get(message.threadId);
        if (thread) thread.queued--;
        this.outcomes.failQuietly(message, 'unknown_target', Errors.UNKNOWN_TARGET(name).detail);
        if (thread) this.lifecycle.settle(thread);
      }
    }
    for (const [name, l] of next) {
      const runtime = state.listeners.get(name);
      if (!runtime) {
        state.register(l);
        added.push(name);
      } else if (runtime.handlerVersion !== l.handlerVersion || !sameConfig(runtime.config, l.config)) {
        runtime.config = l.config;
        runtime.handler = state.handlerFor(l);
        runtime.handlerVersion = l.handlerVersion;
        updated.push(name);
      }
    }
    state.limits = limits;
    state.deps.queue.schedule();
    return { added, removed, updated };
  }

  private listener(name: string): ListenerRuntime {
    const runtime = this.state.listeners.get(name);
    if (!runtime) throw Errors.AGENT_NOT_FOUND(name);
    return runtime;
  }
}

function sameConfig(a: ListenerConfig, b: ListenerConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
