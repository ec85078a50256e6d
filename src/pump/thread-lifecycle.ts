import { Errors } from '../errors/catalogue.js';
import type { ThreadRecord } from '../core/thread.js';
import { PumpBookkeeping } from './journal-bookkeeping.js';
import type { AbortCause } from './pump-state.js';
import type { LiveThread } from './thread-tracker.js';

/**
 * How a thread ends: settled (completed or error) once nothing of it is queued or in flight,
 * killed by an operator, or closed after a crash left it recorded active with nothing live.
 */
export abstract class PumpThreadLifecycle extends PumpBookkeeping {
  /**
   * A crash can leave a thread recorded `active` whose work had all finished (the thread
   * record is written behind the journal). After recovery, an active thread with nothing
   * live is done: it is settled as it would have been.
   */
  protected async closeOrphanThreads(): Promise<void> {
    for (;;) {
      const page = await this.deps.threads.list({ status: 'active', limit: 500, offset: 0 });
      const orphans = page.items.filter((t) => !this.threads.get(t.id));
      for (const t of orphans) {
        const error = t.error ?? (await this.failureSinceInject(t.id));
        const status = error ? 'error' : 'completed';
        this.deps.threads.put({ ...t, status, error });
        this.deps.budgets.finish(t.id);
      }
      if (orphans.length < 500) return;
    }
  }

  /**
   * The error of a delivery of the thread that FAILED (other than by a kill) since its latest
   * inject, from the journal: the thread record is written behind the journal, so a crash can
   * lose the error of a failure whose FAILED entry was committed. Null: none failed.
   */
  protected async failureSinceInject(threadId: string): Promise<string | null> {
    const PAGE = 50;
    for (let offset = 0; ; offset += PAGE) {
      const page = await this.deps.journal.list({ threadId, limit: PAGE, offset, order: 'newest' });
      for (const e of page.items) {
        if (e.state === 'FAILED' && e.failureReason !== 'killed') return e.error ?? e.failureReason ?? 'failed';
        // Failures before the latest inject belong to an earlier exchange (an inject resets them).
        if (e.message.parentId === null) return null;
      }
      if (page.items.length < PAGE) return null;
    }
  }

  /** Aborts the thread's in-flight handlers, fails its queued messages, refuses later ones. */
  async killThread(threadId: string): Promise<ThreadRecord> {
    let live = this.threads.get(threadId);
    // Shared mode: a claim of the thread may come back while the record is read, and start a delivery.
    const stored = live ? null : await this.deps.threads.get(threadId);
    live ??= this.threads.get(threadId);
    if (!live) {
      if (!stored) throw Errors.THREAD_NOT_FOUND(threadId);
      // Completed, failed or killed: its status is history and stays as it was.
      if (stored.status !== 'active') throw Errors.THREAD_FINISHED(threadId);
      // From here a claim of it that comes back (sent before this kill commits) is refused.
      this.threads.markKilled(threadId);
      const record: ThreadRecord = { ...stored, status: 'killed', lastActivity: this.now() };
      await this.storeKill(record);
      this.deps.bus.emit({ type: 'thread_updated', thread: record });
      this.deps.budgets.finish(threadId);
      return record;
    }
    const record = this.killLive(live);
    if (this.deps.work) await this.storeKill(record);
    return record;
  }

  /**
   * Shared mode: the kill is committed before it is answered (the store's kill, changing
   * nothing else of the record: other processes' outcomes count into it). Embedded: written
   * behind, with the thread tracker's writes.
   */
  private async storeKill(record: ThreadRecord): Promise<void> {
    if (this.deps.work && this.deps.threads.kill) await this.deps.threads.kill(record);
    else this.deps.threads.put(record);
  }

  /**
   * Another process killed the thread (and stored it as killed): what of it runs or waits
   * here ends as in a local kill. False when nothing of it is here.
   */
  killThreadHere(threadId: string): boolean {
    // Also when nothing of it runs here yet: a claim of it this process sent may still come back.
    this.threads.markKilled(threadId);
    const live = this.threads.get(threadId);
    if (!live || live.status === 'killed') return false;
    this.killLive(live);
    return true;
  }

  private killLive(live: LiveThread): ThreadRecord {
    const threadId = live.id;
    this.threads.markKilled(threadId);
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
    this.deps.budgets.finish(threadId);
    const record = this.threads.snapshot(live);
    // Shared mode: the kill is stored by the process it was made on (killThread), not from here.
    this.settleThread(live);
    return record;
  }

  /** A thread with nothing queued or in flight is done: completed, error or killed. */
  protected settleThread(thread: LiveThread): void {
    this.threads.touch(thread);
    if (this.deps.work) {
      // Shared mode: the store finished the thread (or not) in the transaction of the outcome
      // that left nothing of it (see bookOutcome); this process only forgets it once idle here.
      if (thread.queued === 0 && thread.inFlight === 0) this.threads.retire(thread);
      return;
    }
    if (thread.status !== 'killed' && (thread.queued > 0 || thread.inFlight > 0)) return;
    if (thread.status === 'killed') {
      if (thread.inFlight === 0) this.threads.retire(thread);
      return;
    }
    thread.status = thread.failed ? 'error' : 'completed';
    thread.lastActivity = this.now();
    // The budget is kept, spend and all: an inject (or a redelivery) into the thread goes on from
    // it, after an operator raised the ceiling of an exhausted one.
    this.deps.budgets.finish(thread.id);
    this.threads.retire(thread);
  }
}
