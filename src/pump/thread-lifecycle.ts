import type { ThreadRecord } from '../core/thread.js';
import { Errors } from '../errors/catalogue.js';
import type { Admission } from './admission.js';
import type { Outcomes } from './outcomes.js';
import type { PumpState } from './state.js';
import type { LiveThread } from './thread-tracker.js';

/**
 * How a thread ends: settled (completed or error) once nothing of it is queued or in flight,
 * killed by an operator, or closed after a crash left it recorded active with nothing live.
 */
export class ThreadLifecycle {
  constructor(
    private readonly state: PumpState,
    private readonly outcomes: Outcomes,
    private readonly admission: Admission,
  ) {}

  /**
   * A thread with nothing queued or in flight here is done here: it leaves memory, ending as the
   * queue says (completed or error when this process is the organism; a cluster's store ends
   * it with its last outcome). A killed thread stays killed.
   */
  settle(thread: LiveThread): void {
    const { threads, deps } = this.state;
    threads.touch(thread);
    if (thread.queued > 0 || thread.inFlight > 0) return;
    if (thread.status !== 'killed') {
      const end = deps.queue.endOf(thread.failed);
      if (end !== null && this.state.asks.has(thread.id)) {
        // An ask of it waits for a person: not finished (its budget stays live).
        thread.status = 'waiting';
        thread.lastActivity = this.state.now();
      } else if (end !== null) {
        thread.status = end;
        thread.lastActivity = this.state.now();
        // The budget is kept, spend and all: an inject (or a redelivery) into the thread goes on
        // from it, after an operator raised the ceiling of an exhausted one.
        deps.budgets.finish(thread.id);
      }
    }
    threads.retire(thread);
  }

  /**
   * A crash can leave a thread recorded `active` whose work had all finished (the thread
   * record is written behind the journal). After recovery, such a thread (the queue says which
   * can be) is settled as it would have been.
   */
  async closeOrphans(): Promise<void> {
    const { threads, deps } = this.state;
    for await (const t of deps.queue.orphans((id) => threads.get(id) !== undefined)) {
      // Its ask was parked but the crash came before its record said `waiting`: it still waits.
      if (this.state.asks.has(t.id)) {
        deps.threads.put({ ...t, status: 'waiting' });
        continue;
      }
      const error = t.error ?? (await this.failureSinceInject(t.id));
      deps.threads.put({ ...t, status: error ? 'error' : 'completed', error });
      deps.budgets.finish(t.id);
    }
  }

  /**
   * The error of a delivery of the thread that FAILED (other than by a kill) since its latest
   * inject, from the journal: the thread record is written behind the journal, so a crash can
   * lose the error of a failure whose FAILED entry was committed. Null: none failed.
   */
  async failureSinceInject(threadId: string): Promise<string | null> {
    const PAGE = 50;
    for (let offset = 0; ; offset += PAGE) {
      const page = await this.state.deps.journal.list({ threadId, limit: PAGE, offset, order: 'newest' });
      for (const e of page.items) {
        if (e.state === 'FAILED' && e.failureReason !== 'killed') return e.error ?? e.failureReason ?? 'failed';
        // Failures before the latest inject belong to an earlier exchange (an inject resets them).
        if (e.message.parentId === null) return null;
      }
      if (page.items.length < PAGE) return null;
    }
  }

  /** Aborts the thread's in-flight handlers, fails its queued messages, refuses later ones. */
  async kill(threadId: string): Promise<ThreadRecord> {
    const { threads, deps } = this.state;
    let live = threads.get(threadId);
    // A cluster's claim of the thread may come back while the record is read, and start a delivery.
    const stored = live ? null : await deps.threads.get(threadId);
    live ??= threads.get(threadId);
    if (!live) {
      if (!stored) throw Errors.THREAD_NOT_FOUND(threadId);
      // Completed, failed or killed: its status is history and stays as it was (a waiting
      // thread's asks are closed by the caller: Inbox.threadKilled).
      if (stored.status !== 'active' && stored.status !== 'waiting') throw Errors.THREAD_FINISHED(threadId);
      // From here a claim of it that comes back (sent before this kill commits) is refused.
      threads.markKilled(threadId);
      const record: ThreadRecord = { ...stored, status: 'killed', lastActivity: this.state.now() };
      await deps.queue.recordKill(record, false);
      deps.bus.emit({ type: 'thread_updated', thread: record });
      deps.budgets.finish(threadId);
      return record;
    }
    const record = this.killLive(live);
    await deps.queue.recordKill(record, true);
    return record;
  }

  /**
   * Another process killed the thread (and stored it as killed): what of it runs or waits
   * here ends as in a local kill. False when nothing of it is here.
   */
  killHere(threadId: string): boolean {
    const { threads } = this.state;
    // Also when nothing of it runs here yet: a claim of it this process sent may still come back.
    threads.markKilled(threadId);
    const live = threads.get(threadId);
    if (!live || live.status === 'killed') return false;
    this.killLive(live);
    return true;
  }

  private killLive(live: LiveThread): ThreadRecord {
    const { state } = this;
    const threadId = live.id;
    state.threads.markKilled(threadId);
    live.status = 'killed';
    live.lastActivity = state.now();
    const reason = Errors.THREAD_KILLED(threadId).detail;
    const dropped = state.deps.queue.drainThread(threadId);
    for (const message of dropped) {
      state.queued--;
      live.queued--;
      this.outcomes.failQuietly(message, 'killed', reason);
    }
    for (const name of new Set(dropped.map((m) => m.to))) {
      const runtime = state.listeners.get(name);
      if (runtime) state.reportState(runtime);
    }
    this.admission.wakeSpaceWaiters();
    for (const cancellation of live.cancellations) cancellation.abort('killed');
    state.deps.budgets.finish(threadId);
    const record = state.threads.snapshot(live);
    // The kill is stored by the process it was made on (kill), not from here.
    this.settle(live);
    return record;
  }
}
