import type { ApprovalParking } from '../core/approval.js';
import type { FailureReason } from '../core/delivery.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';
import type { DeliveryQueue, Placement, QueueHost } from '../core/queue.js';
import type { Journal, MaxAttempts, RecoveredMessages } from '../core/journal.js';
import type { ThreadRecord, ThreadStore } from '../core/thread.js';
import type { AgentLoad, DeliveryOutcomeWrite, FencedResult, ProcessList, WorkerRecord } from '../core/work-source.js';
import { ListenerQueue } from './listener-queue.js';

/** How long one turn of the event loop may spend starting deliveries (see turnStartedAt). */
const TURN_BUDGET_MS = 4;
/** An outcome written to the journal: one process owns the organism, nothing can fence it out. */
const COMMITTED: FencedResult = { committed: true, threadFinished: null };
/** Orphan threads are looked for this many at a time. */
const ORPHAN_PAGE = 500;

/**
 * The queue of an organism run by one process (the memory and SQLite stores): every message is
 * journaled, and one waiting for delivery waits in memory too, on its listener's queue (FIFO
 * per thread, one delivery per thread and listener at a time). Deliveries start round-robin
 * over the listeners while the global and per-listener limits allow, within a time budget per
 * turn of the event loop.
 */
export class EmbeddedQueue implements DeliveryQueue {
  private host: QueueHost | null = null;
  private readonly queues = new Map<string, ListenerQueue>();
  /** Messages waiting: admitted, or in the listeners' queues. */
  private waiting = 0;
  /** Admitted messages not placed yet (an inject is placed right after its admission). */
  private readonly admitted = new Set<string>();
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
  /** Timers of the retries waiting out their backoff on a listener's queue (see place). */
  private readonly wakeUps = new Set<NodeJS.Timeout>();
  /** Held threads (issue 30): their messages wait on their queues, never handed out, until resumed. */
  private readonly held = new Set<string>();

  constructor(
    private readonly journal: Journal,
    readonly threadRecords: ThreadStore,
    private readonly now: () => number = Date.now,
  ) {}

  open(host: QueueHost): void {
    this.host = host;
  }

  close(): void {
    for (const timer of this.wakeUps) clearTimeout(timer);
    this.wakeUps.clear();
  }

  recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages> {
    return this.journal.recover(bootId, maxAttempts);
  }

  async admit(messages: readonly Message[], maxQueue: number): Promise<boolean> {
    // The pump bounds what waits in this process (the whole organism) before it admits: this
    // holds only for a caller that does not.
    if (this.waiting >= maxQueue) return false;
    // Counted as waiting from now, as a cluster's PENDING entries are; place does not count them again.
    this.waiting += messages.length;
    for (const m of messages) this.admitted.add(m.id);
    try {
      await this.journal.pending(messages);
    } catch (err) {
      this.forget(messages);
      throw err;
    }
    return true;
  }

  place(message: Message): Placement {
    if (message.to === EXTERNAL_SENDER || !this.opened().listener(message.to)) {
      this.forget([message]);
      return message.to === EXTERNAL_SENDER ? 'out' : 'unknown';
    }
    let queue = this.queues.get(message.to);
    if (!queue) this.queues.set(message.to, (queue = new ListenerQueue(this.held)));
    const wait = message.notBefore === undefined ? 0 : message.notBefore - this.now();
    if (wait > 0) this.sleep(queue, message, wait);
    else if (message.notBefore !== undefined) queue.unshift(message);
    else queue.push(message);
    if (!this.admitted.delete(message.id)) this.waiting++;
    return 'queued';
  }

  async deliverOut(message: Message): Promise<void> {
    await this.journal.acked(message, [], []);
  }

  abandon(message: Message): boolean {
    this.forget([message]);
    return true;
  }

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.dispatchReady();
    });
  }

  async started(message: Message): Promise<void> {
    await this.journal.dispatched(message);
  }

  release(message: Message): void {
    this.queues.get(message.to)?.release(message.threadId);
  }

  async ack(message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    await this.journal.acked(message, outcome.outgoing, outcome.usage, outcome.guard);
    return COMMITTED;
  }

  async park(message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult> {
    await this.journal.awaiting(message, expiresAt, approval?.state, approval?.usage);
    return COMMITTED;
  }

  async fail(message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    await this.journal.failed(message, reason, error, outcome.outgoing, outcome.usage, outcome.guard);
    return COMMITTED;
  }

  async retry(message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message> {
    return this.journal.retried(message, reason, error, notBefore, outcome.usage, outcome.guard);
  }

  async refuse(message: Message, reason: FailureReason, error: string): Promise<void> {
    await this.journal.pending([message]);
    await this.journal.failed(message, reason, error, [], []);
  }

  async stillHeld(): Promise<boolean> {
    return true;
  }

  hold(threadId: string, held: boolean): void {
    if (held) {
      this.held.add(threadId);
      return;
    }
    if (!this.held.delete(threadId)) return;
    for (const queue of this.queues.values()) queue.unheld(threadId);
    this.schedule();
  }

  drainThread(threadId: string): Message[] {
    const dropped: Message[] = [];
    // In the listeners' order, as their queues are visited.
    for (const listener of this.opened().listeners()) {
      const queue = this.queues.get(listener.name);
      if (queue) dropped.push(...queue.drainThread(threadId));
    }
    this.waiting -= dropped.length;
    return dropped;
  }

  drainListener(name: string): Message[] {
    const queue = this.queues.get(name);
    this.queues.delete(name);
    const dropped = queue ? queue.drainAll() : [];
    this.waiting -= dropped.length;
    return dropped;
  }

  depth(name: string): number {
    return this.queues.get(name)?.size ?? 0;
  }

  endOf(failed: boolean): 'completed' | 'error' {
    return failed ? 'error' : 'completed';
  }

  async *orphans(live: (threadId: string) => boolean): AsyncIterable<ThreadRecord> {
    for (;;) {
      // From the first page each time: what the caller closed meanwhile is no longer active.
      const page = await this.threadRecords.list({ status: 'active', limit: ORPHAN_PAGE, offset: 0 });
      const orphans = page.items.filter((t) => !live(t.id));
      yield* orphans;
      if (orphans.length < ORPHAN_PAGE) return;
    }
  }

  async recordKill(record: ThreadRecord, live: boolean): Promise<void> {
    // A live thread's record is written behind by the pump's thread tracker.
    if (!live) this.threadRecords.put(record);
  }

  load(): ReadonlyMap<string, AgentLoad> {
    return new Map(
      this.opened()
        .listeners()
        .map((l) => [l.name, { queued: this.depth(l.name), inFlight: l.inFlight, currentThread: l.currentThread }]),
    );
  }

  async activeThreads(): Promise<number> {
    return this.opened().liveThreads();
  }

  /** This process is the organism: it is the list. */
  async workers(self: WorkerRecord): Promise<ProcessList> {
    return { shared: false, processes: [self] };
  }

  async thread(id: string, live: ThreadRecord | null): Promise<ThreadRecord | null> {
    // The live view first: the store's record is written behind it.
    return live ?? (await this.threadRecords.get(id));
  }

  /**
   * A retry waits at the head of its thread on its listener's queue, its thread not ready
   * until its time: no handler slot is held, other threads and listeners go on. A timer (no
   * sleep anywhere) wakes it; the journal keeps the time, so a restart waits it out too.
   */
  private sleep(queue: ListenerQueue, message: Message, wait: number): void {
    queue.defer(message);
    this.wakeAt(queue, message, wait);
  }

  /** Wakes the retry at its time; a timer may fire a little before the wall clock says so, then it waits the rest. */
  private wakeAt(queue: ListenerQueue, message: Message, wait: number): void {
    const timer = setTimeout(() => {
      this.wakeUps.delete(timer);
      const left = (message.notBefore ?? 0) - this.now();
      if (left > 0) return this.wakeAt(queue, message, left);
      queue.wake(message.threadId);
      this.schedule();
    }, wait);
    this.wakeUps.add(timer);
  }

  private forget(messages: readonly Message[]): void {
    for (const m of messages) if (this.admitted.delete(m.id)) this.waiting--;
  }

  private opened(): QueueHost {
    if (!this.host) throw new Error('the queue was not opened');
    return this.host;
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

  /** Starts deliveries while there is capacity, visiting listeners round-robin. */
  private dispatchReady(): void {
    const host = this.host;
    if (!host?.dispatching()) return;
    const list = host.listeners();
    const limits = host.limits();
    let idleRounds = 0;
    while (host.running() < limits.maxConcurrentHandlers && this.inTurnBudget() && list.length > 0 && idleRounds < list.length) {
      const listener = list[this.cursor++ % list.length]!;
      const queue = this.queues.get(listener.name);
      if (listener.paused || listener.running >= limits.maxConcurrentPerAgent || !queue?.hasReady()) {
        idleRounds++;
        continue;
      }
      const message = queue.take();
      if (!message) {
        idleRounds++;
        continue;
      }
      idleRounds = 0;
      this.waiting--;
      host.take(message, null);
    }
    host.progress();
  }
}
