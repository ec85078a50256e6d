import { Errors } from '../errors/catalogue.js';
import { PumpDispatch } from './dispatch.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';
import { isSystemName } from './system-messages.js';
import type { LiveThread } from './thread-tracker.js';
import type { ClaimedWork, WorkSource } from '../core/work-source.js';

const NO_OUTCOME = { outgoing: [], usage: [], threadError: null } as const;

/**
 * Dispatch in shared mode (a work source, see work-source.ts): a journaled message is not
 * queued in memory, it waits PENDING in the store, where any process may claim it. While this
 * process has free handler slots (its `--concurrency`, within the organism-wide limit) it
 * claims what its listeners may take now, and delivers it. A claim round starts whenever a
 * slot frees, an agent resumes, or the work source says there may be work (a notification, a
 * poll tick). Embedded mode (no work source) is PumpDispatch's, untouched.
 */
export abstract class PumpSharedDispatch extends PumpDispatch {
  /** The message ids of the deliveries this process runs (PumpDelivery's). */
  protected abstract heldMessageIds(): Iterable<string>;
  private claiming = false;
  private claimAgain = false;
  private listening = false;
  private claimTrouble = false;

  protected override schedule(): void {
    const work = this.deps.work;
    if (!work) return super.schedule();
    work.setInFlight(this.inFlight);
    if (!work.handlers) return;
    if (!this.listening) {
      this.listening = true;
      work.holding?.(() => this.heldMessageIds());
      this.unsubscribes.push(work.onWork(() => this.schedule()));
    }
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = true;
    queueMicrotask(() => void this.claimRounds(work));
  }

  /** Shared mode: the message is in the store already (PENDING, or ACKED for the outside world); here it is only counted. */
  protected override enqueue(message: Message, thread: LiveThread, fresh: boolean): void {
    if (!this.deps.work) return super.enqueue(message, thread, fresh);
    this.totalMessages++;
    thread.messageCount++;
    thread.lastActivity = message.timestamp;
    if (!isSystemName(message.from)) this.threads.addParticipant(thread, message.from);
    this.threads.addParticipant(thread, message.to);
    if (fresh) this.deps.bus.emit({ type: 'message', message, state: 'PENDING' });
    if (message.to === EXTERNAL_SENDER) this.deps.bus.emit({ type: 'message', message, state: 'ACKED' });
    this.settleThread(thread);
  }

  private async claimRounds(work: WorkSource): Promise<void> {
    try {
      for (;;) {
        this.claimAgain = false;
        if (this.status !== 'running' || !this.dispatching) return;
        const cap = Math.min(work.concurrency ?? Infinity, this.limits.maxConcurrentHandlers);
        const free = cap - this.running;
        if (free <= 0) return;
        const listeners = [...this.runtimes.values()].filter((r) => !r.paused).map((r) => r.name);
        let claimed: readonly ClaimedWork[];
        try {
          claimed = await work.claim(listeners, free, { global: this.limits.maxConcurrentHandlers, perAgent: this.limits.maxConcurrentPerAgent });
          if (this.claimTrouble) this.deps.logger.warn('claiming work succeeds again');
          this.claimTrouble = false;
        } catch (err) {
          // The next wake-up (a poll tick at the latest) tries again. An unreachable store
          // logs its outage itself, once; any other failure is told here, once until claims work.
          if (!this.claimTrouble && !Errors.STORAGE_UNAVAILABLE.is(err)) {
            this.deps.logger.warn({ err }, 'claiming work failed; retrying at the next poll');
            this.claimTrouble = true;
          }
          return;
        }
        for (const c of claimed) this.startClaimed(work, c);
        if (claimed.length < free && !this.claimAgain) return;
      }
    } finally {
      this.claiming = false;
      work.setInFlight(this.inFlight);
      this.notifyProgress();
    }
  }

  /**
   * Delivers a claimed message. A thread this process has never seen gets its live record from
   * the store's; a killed thread's message fails at once (fenced, like any outcome), also when
   * the claim read the thread before its kill committed (this process heard of the kill).
   */
  private startClaimed(work: WorkSource, claimed: ClaimedWork): void {
    if (!work.claimCertain(claimed.claimedAt)) {
      // This process was frozen or starved past a good part of its lease since it last renewed
      // it (the claim's answer may have waited in the socket meanwhile): another process may
      // have taken the delivery back and run it, even acked it. Started only once confirmed.
      void this.confirmThenStart(work, claimed);
      return;
    }
    const { message, thread: stored } = claimed;
    const runtime = this.runtimes.get(message.to);
    const live = this.threads.get(message.threadId);
    const refusal =
      !runtime
        ? { reason: 'unknown_target' as const, error: Errors.UNKNOWN_TARGET(message.to).detail }
        : (live ?? stored)?.status === 'killed' || this.threads.wasKilled(message.threadId)
          ? { reason: 'killed' as const, error: Errors.THREAD_KILLED(message.threadId).detail }
          : null;
    if (refusal || !runtime) {
      const r = refusal!;
      this.journalStep(() => work.fail(message, r.reason, r.error, { ...NO_OUTCOME, threadError: r.reason === 'killed' ? null : r.error }).then(() => undefined));
      this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
      this.deps.bus.emit({ type: 'journal_failed', message, reason: r.reason, error: r.error });
      return;
    }
    const thread = live ?? this.threads.activate(message.threadId, this.now(), message.metadata, stored);
    // A thread the store finished and a new message revived.
    if (thread.status === 'completed' || thread.status === 'error') thread.status = 'active';
    thread.queued++;
    void this.deliver(runtime, message);
  }

  private async confirmThenStart(work: WorkSource, claimed: ClaimedWork): Promise<void> {
    const { message } = claimed;
    const where = { messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt };
    let held: number | null;
    try {
      held = await work.confirmClaim(message);
    } catch (err) {
      // Not started, nothing written: the claim goes back as an orphan (held in the database, not
      // run here) at a heartbeat after a lease, or with this process's lease. An outage is logged once elsewhere.
      if (!Errors.STORAGE_UNAVAILABLE.is(err)) this.deps.logger.warn({ ...where, err }, 'could not confirm a claim made before this process was frozen past its lease; not run here, it goes back after a lease');
      this.notifyProgress();
      return;
    }
    if (held === null) {
      this.deps.logger.warn(where, 'a claim made before this process was frozen past its lease was taken back meanwhile; not run here');
      this.notifyProgress();
      return;
    }
    if (this.status !== 'running') return;
    this.startClaimed(work, { ...claimed, claimedAt: held });
  }
}
