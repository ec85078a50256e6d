import { Errors } from '../errors/catalogue.js';
import type { ListenerRuntime } from './listener-runtime.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';
import { isSystemName } from './system-messages.js';
import { PumpThreadLifecycle } from './thread-lifecycle.js';
import type { LiveThread } from './thread-tracker.js';

/** How long one turn of the event loop may spend starting deliveries (see turnStartedAt). */
const TURN_BUDGET_MS = 4;

/**
 * Queues journaled messages on their listeners and starts deliveries while the global and
 * per-listener concurrency limits allow, round-robin over the listeners, within a time budget
 * per turn of the event loop.
 */
export abstract class PumpDispatch extends PumpThreadLifecycle {
  private cursor = 0;
  private scheduled = false;
  /**
   * Deliveries start for at most TURN_BUDGET_MS per turn of the event loop, then the rest wait
   * for the next turn: handlers that return at once free their slots at once, and without a
   * bound a backlog (a recovered journal, a burst of injects) would run as one microtask chain
   * and starve HTTP, timers and the journal's commits.
   */
  private turnStartedAt: number | null = null;
  /** A turn ran out of budget with work left: the next macrotask dispatches again. */
  private turnExhausted = false;

  /** Runs one delivery (see PumpDelivery). */
  protected abstract deliver(runtime: ListenerRuntime, message: Message): Promise<void>;

  /** Puts a journaled message on its way: to a listener's queue, or straight out to the caller. */
  protected override enqueue(message: Message, thread: LiveThread, fresh: boolean): void {
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

  protected schedule(): void {
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
}
