import type { ApprovalParking } from '../../core/approval.js';
import type { FailureReason } from '../../core/delivery.js';
import { EXTERNAL_SENDER, type Message } from '../../core/message.js';
import type { DeliveryQueue, Placement, QueueHost, QueueListener } from '../../core/queue.js';
import type { Journal, MaxAttempts, RecoveredMessages } from '../../core/journal.js';
import type { ThreadRecord, ThreadStore } from '../../core/thread.js';
import {
  recordsKeptByStore,
  type AgentLoad,
  type Claimed,
  type ClaimedWork,
  type DeliveryOutcomeWrite,
  type FencedResult,
  type ProcessList,
  type WorkerRecord,
  type WorkSource,
} from '../../core/work-source.js';
import { Errors } from '../../errors/catalogue.js';

/** How many claimed deliveries' outcomes (and started deliveries) a queue remembers, at most. */
const BOOKED_KEPT = 1_000;

/**
 * The queue of a clustered organism (several processes on one PostgreSQL store, see
 * work-source.ts): a journaled message waits PENDING in the store, where any process may claim
 * it. While this process has free handler slots (its `--concurrency`, within the organism-wide
 * limit) it claims what its listeners may take now and hands it to the pump. A claim round
 * starts whenever a slot frees, a listener resumes, or the work source says there may be work
 * (a notification, a poll tick). Outcomes commit fenced by the claim; the store finishes a
 * thread's record in the transaction of its last outcome.
 */
export class ClusterQueue implements DeliveryQueue {
  readonly threadRecords: ThreadStore;
  private host: QueueHost | null = null;
  private claiming = false;
  private claimAgain = false;
  /** Claims made before this process was frozen past its lease, per listener, waiting to be confirmed before they start. */
  private readonly confirming = new Map<string, number>();
  private unlisten: (() => void) | null = null;
  private claimTrouble = false;
  /**
   * Whether a limit stopped the last claim (see Claimed): only then can a freed handler slot
   * let a claim take more. Otherwise the next claim waits for new work (a notification, this
   * process's own commits, the poll): claiming at every freed slot found nothing and competed
   * with the outcomes being written (at 50 msg/s, one empty claim per hop).
   */
  private capped = true;
  private offTakenBack: (() => void) | null = null;
  /** The attempt of each claimed delivery this process started (while the pump holds it, see startClaimed). */
  private readonly running = new Map<string, number>();
  /** Claimed deliveries whose outcome this process committed lately, as `id:attempt` (oldest first, bounded). */
  private readonly booked = new Set<string>();

  constructor(
    private readonly work: WorkSource,
    private readonly journal: Journal,
    private readonly threads: ThreadStore,
  ) {
    // Thread records are kept by the store in the journal's transactions: one process's memory
    // of a thread would overwrite what another process's outcome decided.
    this.threadRecords = recordsKeptByStore(threads);
  }

  open(host: QueueHost): void {
    this.host = host;
    this.offTakenBack = this.work.onTakenBack((taken) => host.takenBack(taken));
  }

  close(): void {
    this.unlisten?.();
    this.unlisten = null;
    this.offTakenBack?.();
    this.offTakenBack = null;
  }

  /** The journal's recovery of a clustered store returns nothing to deliver: claims that outlived their process come back by lease. */
  recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages> {
    return this.journal.recover(bootId, maxAttempts);
  }

  admit(messages: readonly Message[], maxQueue: number): Promise<boolean> {
    return this.work.admit(messages, maxQueue);
  }

  /** The message is in the store already: PENDING for a claimer, or ACKED for the outside world. */
  place(message: Message): Placement {
    return message.to === EXTERNAL_SENDER ? 'out' : 'elsewhere';
  }

  /** Acked in the transaction of the outcome that sent it. */
  async deliverOut(): Promise<void> {}

  /** Its claimer refuses it: failing it here could race a claim of it. */
  abandon(): boolean {
    return false;
  }

  /** The store's claim passes over held threads (thread_holds): a resume only looks for work again. */
  hold(_threadId: string, held: boolean): void {
    if (!held) this.schedule();
  }

  schedule(why?: 'slot'): void {
    const host = this.host;
    if (!host) return;
    this.work.setInFlight(host.inFlight());
    if (!this.work.handlers) return;
    // While a claim is under way, whether it will be stopped by a limit is not known yet.
    if (why === 'slot' && !this.capped && !this.claiming) return;
    if (!this.unlisten) {
      this.work.holding?.(() => host.held());
      this.unlisten = this.work.onWork(() => this.schedule());
    }
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = true;
    queueMicrotask(() => void this.claimRounds(host));
  }

  /** The claim made the entry DISPATCHED. */
  async started(): Promise<void> {}

  release(): void {}

  ack(message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.ended(message, this.work.ack(message, outcome));
  }

  park(message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult> {
    // Not booked as an outcome: a decided approval is claimed again at the same attempt, and that
    // claim (its continuation) must run, here or on any worker.
    return this.ended(message, this.work.park(message, expiresAt, approval), false);
  }

  fail(message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.ended(message, this.work.fail(message, reason, error, outcome));
  }

  /**
   * Fenced by the claim; the entry waits PENDING in the store, passed over by every claimer
   * until its time (a claimer's poll, every POLL_MS, finds it then).
   */
  async retry(message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message | null> {
    const next = await this.work.retry(message, reason, error, notBefore, outcome);
    if (this.running.get(message.id) === message.attempt) this.running.delete(message.id);
    return next;
  }

  /** A claimed delivery's outcome was written (or found not ours): it is no longer started here. */
  private async ended(message: Message, result: Promise<FencedResult>, book = true): Promise<FencedResult> {
    const r = await result;
    if (this.running.get(message.id) === message.attempt) this.running.delete(message.id);
    if (r.committed && book) {
      this.booked.add(`${message.id}:${message.attempt}`);
      if (this.booked.size > BOOKED_KEPT) this.booked.delete(this.booked.values().next().value as string);
    }
    return r;
  }

  /** One transaction journals it FAILED at once (a PENDING entry could be claimed before it fails). */
  async refuse(message: Message, reason: FailureReason, error: string): Promise<void> {
    await this.journal.failed(message, reason, error, [], []);
  }

  async stillHeld(message: Message): Promise<boolean> {
    return (await this.work.confirmClaim(message)) !== null;
  }

  /** Nothing waits in this process: it claims only what it starts at once. */
  drainThread(): Message[] {
    return [];
  }

  drainListener(): Message[] {
    return [];
  }

  depth(): number {
    return 0;
  }

  endOf(): null {
    return null;
  }

  async *orphans(): AsyncIterable<ThreadRecord> {}

  /** Committed before it is answered, changing nothing else of the record: other processes' outcomes count into it. */
  async recordKill(record: ThreadRecord): Promise<void> {
    if (this.threads.kill) await this.threads.kill(record);
    else this.threads.put(record);
  }

  load(): Promise<ReadonlyMap<string, AgentLoad>> {
    return this.work.agentLoad();
  }

  async activeThreads(): Promise<number> {
    return (await this.threads.list({ status: 'active', limit: 0, offset: 0 })).total;
  }

  /** The store's `workers` table: this process has its own row there. */
  async workers(_self: WorkerRecord): Promise<ProcessList> {
    return { shared: true, processes: await this.work.workers() };
  }

  /** The store's record, which every process's outcomes and kills write in their own transactions. */
  async thread(id: string, live: ThreadRecord | null): Promise<ThreadRecord | null> {
    return (await this.threads.get(id)) ?? live;
  }

  private async claimRounds(host: QueueHost): Promise<void> {
    const { work } = this;
    try {
      for (;;) {
        this.claimAgain = false;
        if (host.status() !== 'running' || !host.dispatching()) return;
        const limits = host.limits();
        const cap = Math.min(work.concurrency ?? Infinity, limits.maxConcurrentHandlers);
        const free = cap - host.running();
        if (free <= 0) {
          this.capped = true;
          return;
        }
        const all = host.listeners();
        const listeners = all.filter((l) => !l.paused).map((l) => l.name);
        let claimed: Claimed;
        try {
          // What this process is still booking holds no handler slot: the next claim overlaps its outcome's commit.
          claimed = await work.claim(listeners, free, { global: limits.maxConcurrentHandlers, perAgent: limits.maxConcurrentPerAgent, running: this.runningNow(all) });
          if (this.claimTrouble) host.logger.warn('claiming work succeeds again');
          this.claimTrouble = false;
        } catch (err) {
          this.capped = true;
          // The next wake-up (a poll tick at the latest) tries again. An unreachable store
          // logs its outage itself, once; any other failure is told here, once until claims work.
          if (!this.claimTrouble && !Errors.STORAGE_UNAVAILABLE.is(err)) {
            host.logger.warn({ err }, 'claiming work failed; retrying at the next poll');
            this.claimTrouble = true;
          }
          return;
        }
        this.capped = claimed.capped;
        for (const c of claimed) this.startClaimed(host, c);
        if (claimed.length < free && !this.claimAgain) return;
        // The deliveries just taken start first: claimed at once, the next claim found their
        // listeners' room still taken by handlers that had not even run, and got a third of what
        // it could (the peers chain: 7.4 entries per claim, 15 after this; half the claims).
        if (claimed.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.claiming = false;
      work.setInFlight(host.inFlight());
      host.progress();
    }
  }

  /** Handlers running in this process per listener, with the claims waiting to be confirmed (they will run). */
  private runningNow(listeners: readonly QueueListener[]): Map<string, number> {
    const running = new Map<string, number>();
    for (const l of listeners) if (l.running > 0) running.set(l.name, l.running);
    for (const [name, n] of this.confirming) running.set(name, (running.get(name) ?? 0) + n);
    return running;
  }

  private startClaimed(host: QueueHost, claimed: ClaimedWork): void {
    const { message } = claimed;
    if (this.runsAlready(host, message)) {
      // A claim of a delivery this process runs (or has just ended) at this very attempt: its
      // first claim was lost by the database (an asynchronous commit, see claim-sql.ts) and it
      // was claimed again, here. It is not run twice: the delivery under way acks against this
      // claim (same worker, same attempt).
      host.logger.warn(
        { messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt },
        'claimed again a delivery this process runs (the database lost its first claim); not started twice',
      );
      return;
    }
    if (!this.work.claimCertain(claimed.claimedAt)) {
      // This process was frozen or starved past a good part of its lease since it last renewed
      // it (the claim's answer may have waited in the socket meanwhile): another process may
      // have taken the delivery back and run it, even acked it. Started only once confirmed.
      void this.confirmThenStart(host, claimed);
      return;
    }
    this.running.set(message.id, message.attempt);
    if (this.running.size > BOOKED_KEPT) this.forgetEnded(host);
    host.take(message, { thread: claimed.thread, claimedAt: claimed.claimedAt });
  }

  /** Whether this process runs the delivery at this attempt, or committed its outcome lately. */
  private runsAlready(host: QueueHost, message: Message): boolean {
    if (this.booked.has(`${message.id}:${message.attempt}`)) return true;
    if (this.running.get(message.id) !== message.attempt) return false;
    for (const id of host.held()) if (id === message.id) return true;
    return false;
  }

  /** Drops started deliveries the pump no longer holds (ended without an outcome written: a shutdown). */
  private forgetEnded(host: QueueHost): void {
    const held = new Set(host.held());
    for (const id of this.running.keys()) if (!held.has(id)) this.running.delete(id);
  }

  private async confirmThenStart(host: QueueHost, claimed: ClaimedWork): Promise<void> {
    const { message } = claimed;
    const where = { messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt };
    let held: number | null;
    this.confirming.set(message.to, (this.confirming.get(message.to) ?? 0) + 1);
    try {
      held = await this.work.confirmClaim(message);
    } catch (err) {
      // Not started, nothing written: the claim goes back as an orphan (held in the database, not
      // run here) at a heartbeat after a lease, or with this process's lease. An outage is logged once elsewhere.
      if (!Errors.STORAGE_UNAVAILABLE.is(err))
        host.logger.warn({ ...where, err }, 'could not confirm a claim made before this process was frozen past its lease; not run here, it goes back after a lease');
      host.progress();
      return;
    } finally {
      // Started below (counted as running from then on) or not at all; nothing runs in between.
      const n = (this.confirming.get(message.to) ?? 1) - 1;
      if (n > 0) this.confirming.set(message.to, n);
      else this.confirming.delete(message.to);
    }
    if (held === null) {
      host.logger.warn(where, 'a claim made before this process was frozen past its lease was taken back meanwhile; not run here');
      host.progress();
      return;
    }
    if (host.status() !== 'running') return;
    this.startClaimed(host, { ...claimed, claimedAt: held });
  }
}
