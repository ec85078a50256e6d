import type { ListenerConfig, ResolvedListener } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import type { OrganismStatus, ReloadResult } from '../events/types.js';
import { PumpBudgetNotices } from './budget-notices.js';
import type { ListenerRuntime } from './listener-runtime.js';
import type { Message } from '../core/message.js';
import type { LiveThread } from './thread-tracker.js';
import type { ThreadRecord } from '../core/thread.js';
import type { AbortCause, PumpDeps, PumpLimits } from './pump-state.js';
import { isSystemName } from './system-messages.js';

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
 * pause and resume an agent, reload the configuration.
 */
export abstract class PumpControl extends PumpBudgetNotices {
  /** Starts dispatching; `recovered` are journaled messages to deliver again, in order. */
  async start(recovered: readonly Message[] = []): Promise<void> {
    // Stored threads are read before any is activated: activation queues thread writes, and a
    // read flushes the writer, so interleaving the two would commit once per recovered message.
    const storedThreads = await this.deps.threads.getMany([...new Set(recovered.map((m) => m.threadId).filter((id) => !this.threads.get(id)))]);
    // Recovery goes on with the conversation the crash interrupted, not a new one: a failure
    // before the crash still ends the thread in error once its work drains. Read (like the
    // stored threads) before anything is activated, and marked before its first message is
    // enqueued: a message to the caller settles the thread at once.
    const failures = new Map<string, string>();
    for (const id of new Set(recovered.map((m) => m.threadId))) {
      if (this.threads.get(id) || storedThreads.get(id)?.status === 'killed') continue;
      const error = storedThreads.get(id)?.error ?? (await this.failureSinceInject(id));
      if (error !== null) failures.set(id, error);
    }
    for (const message of recovered) {
      const stored = this.threads.get(message.threadId) ? null : (storedThreads.get(message.threadId) ?? null);
      if (stored?.status === 'killed') {
        await this.deps.journal.failed(message, 'killed', Errors.THREAD_KILLED(message.threadId).detail, [], []);
        continue;
      }
      const fresh = !this.threads.get(message.threadId);
      const thread = this.threads.activate(message.threadId, this.now(), message.metadata, stored);
      const error = fresh ? failures.get(thread.id) : undefined;
      if (error !== undefined) {
        thread.failed = true;
        thread.error = error;
      }
      this.enqueue(message, thread, false);
    }
    // Shared mode: other processes may be running any active thread's work.
    if (!this.deps.work) await this.closeOrphanThreads();
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

  private runtime(name: string): ListenerRuntime {
    const runtime = this.runtimes.get(name);
    if (!runtime) throw Errors.AGENT_NOT_FOUND(name);
    return runtime;
  }

  private setStatus(status: OrganismStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.deps.bus.emit({ type: 'organism_status', status });
  }
}

function sameConfig(a: ListenerConfig, b: ListenerConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
