import type { ApprovalParking } from '../../core/approval.js';
import type { FailureReason } from '../../core/delivery.js';
import type { Message } from '../../core/message.js';
import type { AgentLoad, Claimed, ClaimLimits, DeliveryOutcomeWrite, FencedResult, TakenBack, WorkSource } from '../../core/work-source.js';
import type { Logger } from '../../util/logger.js';
import type { MaxAttempts } from '../../core/journal.js';
import type { WorkerRecord } from '../../core/work-source.js';
import type { Channels, PgListener } from '../bus/channels.js';
import type { PgClusterJournal } from './cluster-journal.js';
import type { PgWorkers, WorkerIdentity } from '../workers.js';
import { isConnectionFailure } from '../../store/postgres/reachability.js';

/** A claimer with free slots looks for work this often even when no notification came. */
export const POLL_MS = 1_000;
/** Default lease: a worker whose heartbeat is older than this has its claims taken back. */
export const DEFAULT_LEASE_MS = 30_000;

export interface PgWorkSourceOptions {
  readonly journal: PgClusterJournal;
  readonly workers: PgWorkers;
  readonly listener: PgListener;
  readonly channels: Channels;
  readonly me: WorkerIdentity;
  /** journal.max_attempts (per listener, its retry.max_attempts): a claim taken back past it FAILS (max_attempts). */
  readonly maxAttempts: MaxAttempts;
  readonly logger?: Logger;
}

/**
 * The PostgreSQL work source of one process: its `workers` row and heartbeat (every lease/3),
 * the expired-lease rule run at each heartbeat (by whichever process notices first), claims and
 * fenced outcomes through the cluster journal, and wake-ups from NOTIFY on the work channel,
 * from a poll every POLL_MS, after the LISTEN connection comes back, and after claims were
 * taken back. NOTIFY is only a hint: the poll finds whatever a lost notification announced.
 */
export class PgWorkSource implements WorkSource {
  readonly workerId: string;
  readonly handlers: boolean;
  readonly concurrency: number | null;
  private readonly wakers = new Set<() => void>();
  private readonly takenBackWatchers = new Set<(taken: readonly TakenBack[]) => void>();
  private inFlight = 0;
  /** The message ids of the deliveries this process runs (see holding). */
  private held: (() => Iterable<string>) | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private readonly offs: Array<() => void> = [];
  private beating: Promise<void> | null = null;
  private stopped = false;
  /**
   * Since when this process's heartbeats have kept succeeding (null: the last one failed). A
   * process cut off from the database (an outage, a restart) does not take back the others'
   * claims until it has been back for a whole lease: they were cut off too, and each gets
   * that long to renew its lease before its deliveries are run again elsewhere.
   */
  private beatingSince: number | null = Number.NEGATIVE_INFINITY;
  /**
   * When (this process's clock) the heartbeat that last renewed its lease was sent: until a
   * lease after it, no other process can take back what this one claimed. Null: never renewed.
   */
  private renewedAt: number | null = null;
  /**
   * Since when the lease has been renewed without a lapse: a claim sent before then may have
   * been taken back during the lapse (this process frozen or cut off past its lease), whatever
   * heartbeats succeeded since.
   */
  private unbrokenSince = Number.POSITIVE_INFINITY;

  constructor(private readonly o: PgWorkSourceOptions) {
    this.workerId = o.me.id;
    this.handlers = o.me.handlers;
    this.concurrency = o.me.concurrency;
  }

  /** Registers this process and starts heartbeating (and, for a claimer, listening and polling). */
  async start(): Promise<void> {
    const registeredAt = Date.now();
    await this.o.workers.register(this.o.me);
    this.renewed(registeredAt);
    // A process that just started takes back what dead workers held at once (a restart after a crash).
    await this.reclaim();
    const beat = Math.max(100, Math.floor(this.o.me.leaseMs / 3));
    this.heartbeatTimer = setInterval(() => void this.tick(), beat);
    this.heartbeatTimer.unref();
    if (this.handlers) {
      // Not woken by its own commits: each that makes work claimable (an inject, an outcome's
      // sends, a redeliver, a decided approval, claims taken back) is followed by a claim round
      // here already, and the notification, arriving during that round, made it claim twice.
      const own = `${this.workerId}|`;
      this.offs.push(await this.o.listener.subscribe(this.o.channels.work, (payload) => (payload.startsWith(own) ? undefined : this.wake())));
      this.offs.push(this.o.listener.onReconnect(() => this.wake()));
      this.pollTimer = setInterval(() => this.wake(), POLL_MS);
      this.pollTimer.unref();
    }
  }

  async claim(listeners: readonly string[], max: number, limits: ClaimLimits): Promise<Claimed> {
    if (!this.handlers || this.stopped) return Object.assign([], { capped: false });
    const claimedAt = Date.now();
    const claimed = await this.o.journal.claim(this.workerId, listeners, max, limits);
    return Object.assign(
      claimed.map((c) => ({ ...c, claimedAt })),
      { capped: claimed.capped },
    );
  }

  admit(messages: readonly Message[], maxQueue: number): Promise<boolean> {
    return this.o.journal.pendingWithin(messages, maxQueue);
  }

  ack(message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.o.journal.ackClaimed(this.workerId, message, outcome);
  }

  park(message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult> {
    return this.o.journal.parkClaimed(this.workerId, message, expiresAt, approval);
  }

  fail(message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.o.journal.failClaimed(this.workerId, message, reason, error, outcome);
  }

  retry(message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message | null> {
    return this.o.journal.retryClaimed(this.workerId, message, reason, error, notBefore, outcome);
  }

  claimCertain(claimedAt: number): boolean {
    return claimedAt >= this.unbrokenSince && this.renewedAt !== null && Date.now() < this.renewedAt + this.certainMs();
  }

  async confirmClaim(message: Message): Promise<number | null> {
    const sentAt = Date.now();
    if (!(await this.o.workers.heartbeat(this.workerId, this.inFlight))) return null;
    this.renewed(sentAt);
    // Renewed at sentAt and still ours after it: nobody takes it back before sentAt + lease.
    return (await this.o.journal.holdsClaim(this.workerId, message)) ? sentAt : null;
  }

  /** How long after a renewal the lease is taken as certain: a third of it is kept back for clocks that differ between machines. */
  private certainMs(): number {
    return (this.o.me.leaseMs * 2) / 3;
  }

  /** A heartbeat sent at `sentAt` (this process's clock) renewed the lease. */
  private renewed(sentAt: number): void {
    if (this.renewedAt === null || sentAt >= this.renewedAt + this.certainMs()) this.unbrokenSince = sentAt;
    this.renewedAt = Math.max(this.renewedAt ?? sentAt, sentAt);
  }

  onWork(fn: () => void): () => void {
    this.wakers.add(fn);
    return () => this.wakers.delete(fn);
  }

  onTakenBack(fn: (taken: readonly TakenBack[]) => void): () => void {
    this.takenBackWatchers.add(fn);
    return () => this.takenBackWatchers.delete(fn);
  }

  holding(held: () => Iterable<string>): void {
    this.held = held;
  }

  setInFlight(n: number): void {
    this.inFlight = n;
  }

  workers(): Promise<readonly WorkerRecord[]> {
    return this.o.workers.list();
  }

  agentLoad(): Promise<ReadonlyMap<string, AgentLoad>> {
    return this.o.journal.agentLoad();
  }

  /**
   * Stops heartbeating and marks this process stopped, then gives back what it still holds
   * (deliveries a shutdown cut short) with attempt + 1, for the other processes to claim now
   * rather than after its lease. Called after the pump stopped.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    for (const off of this.offs) off();
    await this.beating?.catch(() => {});
    try {
      await this.o.workers.stopped(this.workerId);
      await this.o.journal.reclaimExpired(this.o.maxAttempts, this.workerId);
    } catch (err) {
      // Its lease runs out by itself: another process takes its claims back then.
      this.o.logger?.warn({ err }, "could not give back this process's claims at stop; they are taken back when its lease expires");
    }
  }

  private wake(): void {
    for (const fn of this.wakers) fn();
  }

  private tick(): void {
    if (this.beating || this.stopped) return;
    this.beating = (async () => {
      try {
        const sentAt = Date.now();
        const alive = await this.o.workers.heartbeat(this.workerId, this.inFlight);
        if (alive) this.renewed(sentAt);
        this.beatingSince ??= Date.now();
        if (!alive) this.o.logger?.warn({ workerId: this.workerId }, "this process's workers row says it stopped; its claims may have been taken back");
        await this.reclaim(Date.now() - this.beatingSince >= this.o.me.leaseMs);
        await this.o.journal.foldCountSlots();
      } catch (err) {
        if (isConnectionFailure(err)) this.beatingSince = null;
        // An unreachable database is logged by the store's watch, once per outage.
        else this.o.logger?.warn({ err }, 'heartbeat failed; retrying at the next one');
      }
    })().finally(() => {
      this.beating = null;
    });
  }

  /** `others`: take back the claims of processes whose lease expired (see beatingSince); this process's orphans always. */
  private async reclaim(others = true): Promise<void> {
    const expired = others ? await this.o.journal.reclaimExpired(this.o.maxAttempts) : { retried: 0, failed: 0, from: [] };
    let { retried, failed } = expired;
    const from = [...expired.from];
    if (this.held) {
      // Taken after the ids are read: a claim committed meanwhile is younger than a lease.
      const orphans = { worker: this.workerId, held: [...this.held()], claimedBefore: Date.now() - this.o.me.leaseMs };
      const own = await this.o.journal.reclaimExpired(this.o.maxAttempts, undefined, orphans);
      if (own.retried + own.failed > 0)
        this.o.logger?.warn(
          { retried: own.retried, failed: own.failed },
          'gave back claims this process held in the database but was not running (a claim whose commit outlived its connection)',
        );
      retried += own.retried;
      failed += own.failed;
      from.push(...own.from);
    }
    if (retried + failed === 0) return;
    this.o.logger?.warn({ retried, failed }, 'took back the deliveries of workers whose lease expired');
    for (const fn of this.takenBackWatchers) {
      try {
        fn(from);
      } catch (err) {
        this.o.logger?.warn({ err }, 'a watcher of deliveries taken back failed');
      }
    }
    if (retried > 0) this.wake();
  }
}
