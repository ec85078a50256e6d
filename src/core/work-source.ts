import type { ApprovalParking } from './approval.js';
import type { ThreadRecord, ThreadStatus, ThreadStore } from './thread.js';
import type { UsageEvent } from './usage.js';
import type { FailureReason, OutcomeGuard } from './delivery.js';
import type { Message } from './message.js';

/**
 * Where a pump in cluster mode gets its work: a store that is the work queue of several
 * processes (PostgreSQL). Without one (embedded mode: memory and SQLite stores) the pump
 * queues journaled messages in memory, as it always did.
 *
 * In cluster mode every journaled message waits PENDING in the store; a pump with free slots
 * claims the ones its listeners may take now (FIFO per thread and recipient, organism-wide
 * limits, paused agents skipped), delivers them, and commits each outcome FENCED: only while
 * the claim is still its own (the same worker, the same attempt). A claim whose worker stops
 * heartbeating is taken back by the store and delivered again with attempt + 1.
 */
export interface WorkSource {
  /** This process's id in the store's `workers` table. */
  readonly workerId: string;
  /** Whether this process runs handlers (false: `serve --handlers off`, it never claims). */
  readonly handlers: boolean;
  /** This process's own cap on concurrent handlers (`--concurrency`); null: the organism-wide limit. */
  readonly concurrency: number | null;
  /**
   * Claims up to `max` deliveries for `listeners`, never past the organism-wide limits (counted
   * over every process). Each comes with its thread's stored record (null: not stored yet).
   */
  claim(listeners: readonly string[], max: number, limits: ClaimLimits): Promise<Claimed>;
  /**
   * Journals injected messages PENDING (waking claimers) unless the organism-wide queue, the
   * PENDING entries of every process, already holds `maxQueue`: then false, nothing written.
   */
  admit(messages: readonly Message[], maxQueue: number): Promise<boolean>;
  /** The fenced ack: the outcome (outgoing messages PENDING, usage) commits with it, or nothing does. */
  ack(message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult>;
  /** The fenced park of an ask (DISPATCHED -> AWAITING, the claim released), like `ack`. */
  park(message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult>;
  /** The fenced failure, like `ack`. */
  fail(message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult>;
  /** The fenced retry (see DeliveryQueue.retry): the next attempt's message, or null when the claim was no longer ours. */
  retry(message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message | null>;
  /**
   * True while no other process can have taken back a claim sent at `claimedAt` (this
   * process's clock): the lease was renewed recently enough and without a lapse since the claim
   * (synchronous, no round trip). False after this process was frozen or starved past a good
   * part of its lease (SIGSTOP, a stalled event loop, an outage): the claim may have been taken
   * back and run elsewhere, so it must not start without confirmClaim.
   */
  claimCertain(claimedAt: number): boolean;
  /**
   * Renews this process's lease and checks that `message`'s claim is still its own at this
   * attempt: the time (as `claimedAt`) from which it is certain again, or null: the claim was
   * taken back (the delivery runs, or ran, elsewhere) and must not start here.
   */
  confirmClaim(message: Message): Promise<number | null>;
  /** Calls `fn` whenever there may be new work (a notification, a poll tick, a lease taken back). */
  onWork(fn: () => void): () => void;
  /** How many deliveries this process has in flight now (shown in its `workers` row). */
  setInFlight(n: number): void;
  /** Tells the source which deliveries this process runs (message ids), so claims it holds but does not run can be given back. */
  holding?(held: () => Iterable<string>): void;
  /** Per listener, across every process: entries waiting (PENDING) and being delivered (DISPATCHED). */
  agentLoad(): Promise<ReadonlyMap<string, AgentLoad>>;
  /** Every process of the organism (live ones first), with its heartbeat and load. */
  workers(): Promise<readonly WorkerRecord[]>;
  /** Calls `fn` after this process took back deliveries from processes whose lease expired (or that held them but did not run them). */
  onTakenBack(fn: (taken: readonly TakenBack[]) => void): () => void;
}

/** Deliveries taken back from one process (its lease expired, or it held claims it did not run). */
export interface TakenBack {
  /** The process that held them (null: a DISPATCHED entry nobody held). */
  readonly worker: string | null;
  /** Its name in the workers table (null: unknown). */
  readonly name: string | null;
  /** Back to PENDING, attempt + 1, for any process to claim. */
  readonly retried: number;
  /** FAILED max_attempts: they had run out of attempts. */
  readonly failed: number;
}

export interface AgentLoad {
  readonly queued: number;
  readonly inFlight: number;
  /** The thread of its latest delivery in flight anywhere (null: none). */
  readonly currentThread: string | null;
}

export interface ClaimLimits {
  /** limits.max_concurrent_handlers, across every process. */
  readonly global: number;
  /** limits.max_concurrent_per_agent, across every process. */
  readonly perAgent: number;
  /**
   * The claiming process's handlers running now, per listener (those it has claimed and not
   * started yet included): the limits count handlers running at once, as embedded mode does, so
   * its deliveries booking their outcome (still DISPATCHED in the store, no handler running)
   * are not counted. The other processes' DISPATCHED entries all count. Without it, every
   * DISPATCHED entry counts, the claimer's own included.
   */
  readonly running?: ReadonlyMap<string, number>;
}

/**
 * What a claim took, and whether a limit stopped it (`capped`): some listener got all the room
 * it had under the per-agent limit, or the claim all the room under the global limit and the
 * process's free slots. Not capped, the claim took everything it could see: a handler slot
 * freeing gives it nothing more.
 */
export type Claimed = readonly ClaimedWork[] & { readonly capped: boolean };

export interface ClaimedWork {
  /** The message, with the attempt this claim delivers. */
  readonly message: Message;
  readonly thread: ThreadRecord | null;
  /** When (this process's clock) the claim was sent: see claimCertain. */
  readonly claimedAt: number;
}

export interface DeliveryOutcomeWrite {
  readonly outgoing: readonly Message[];
  readonly usage: readonly UsageEvent[];
  /** The thread ends in `error` (a failure, a refused send): its record keeps this error. */
  readonly threadError: string | null;
  /** Checked as the outcome commits (embedded queue): see OutcomeGuard. */
  readonly guard?: OutcomeGuard;
}

export interface FencedResult {
  /** False: the claim was no longer ours (lease lost); nothing of the outcome was written. */
  readonly committed: boolean;
  /** The outcome left no PENDING or DISPATCHED entry of the thread: its record was finished so, in the same transaction. */
  readonly threadFinished: Extract<ThreadStatus, 'completed' | 'error'> | null;
}

/** The thread store as a shared-mode pump's thread tracker uses it: it reads, the store writes. */
export function recordsKeptByStore(store: ThreadStore): ThreadStore {
  return {
    put() {},
    get: (id) => store.get(id),
    getMany: (ids) => store.getMany(ids),
    list: (q) => store.list(q),
  };
}
/**
 * A process of an organism, as GET /api/v1/workers shows it: a row of PostgreSQL's `workers`
 * table in a cluster; the one process itself in embedded mode.
 */
export interface WorkerRecord {
  readonly id: string;
  /** `serve` (the control API, with or without handlers) or `worker` (handlers only). */
  readonly kind: 'serve' | 'worker';
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly handlers: boolean;
  readonly configHash: string;
  readonly startedAt: number;
  readonly heartbeatAt: number;
  readonly stoppedAt: number | null;
  /** Heartbeating within its lease and not stopped: its claims are its own. */
  readonly alive: boolean;
  /** `--concurrency`; null: the organism-wide limit. */
  readonly concurrency: number | null;
  /** Alive: deliveries it ran at its last heartbeat. Not alive: the claims it still holds in the store (0 once they were taken back). */
  readonly inFlight: number;
  /** Null: no lease (embedded, one process owns the store). */
  readonly leaseMs: number | null;
}

/** The processes of an organism, live ones first. */
export interface ProcessList {
  /** True: processes share the store (a cluster); false: embedded, the one process is the organism. */
  readonly shared: boolean;
  readonly processes: readonly WorkerRecord[];
}
