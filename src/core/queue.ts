import type { ApprovalParking } from './approval.js';
import type { FailureReason } from './delivery.js';
import type { Message } from './message.js';
import type { MaxAttempts, RecoveredMessages } from './journal.js';
import type { ThreadRecord, ThreadStatus, ThreadStore } from './thread.js';
import type { AgentLoad, DeliveryOutcomeWrite, FencedResult, ProcessList, TakenBack, WorkerRecord } from './work-source.js';
import type { Logger } from '../util/logger.js';

/**
 * Where journaled messages wait for delivery, and where each delivery's outcome is written.
 * Two implementations keep the same rules: the embedded queue (one process: the journal, and
 * in-memory queues per listener, src/queue/) and the cluster queue (every process of a
 * clustered organism claims from PostgreSQL under leases, src/cluster/queue/). The pump is
 * written once against this interface and never asks which one it has; the queue contract
 * suite (test/queue/) runs every rule on both.
 *
 * The life of a message: `admit` (an inject) or an outcome's write journals it PENDING; the
 * pump `place`s it; `schedule` hands out what may start now (the host's `take`); the delivery
 * `started`, ran, and is settled by `ack` or `fail`; `release` lets its thread's next message go.
 */
export interface DeliveryQueue {
  /** Thread records as the pump's live-thread tracker writes them (cluster: the store keeps them, in its own transactions). */
  readonly threadRecords: ThreadStore;
  /** The pump starts feeding on this queue (once); `close` stops what it listens to. */
  open(host: QueueHost): void;
  close(): void;

  /**
   * At boot, before `open`: what a crash left unfinished goes back to PENDING (DISPATCHED past
   * `maxAttempts` fails), and the messages this process is to deliver again, in order (cluster:
   * none; a dead process's claims come back to any claimer when its lease lapses).
   */
  recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages>;
  /** Journals injected messages PENDING unless the organism's queue already holds `maxQueue`: then false, nothing written. */
  admit(messages: readonly Message[], maxQueue: number): Promise<boolean>;
  /**
   * Where a journaled message goes from here: `queued` to wait in this process for its listener;
   * `elsewhere` waiting in the store for any process's claim; `out` to the outside world (it is
   * delivered by being recorded: see deliverOut); `unknown` no listener here takes it.
   */
  place(message: Message): Placement;
  /** Records a message to the outside world as delivered (cluster: its outcome's transaction did). */
  deliverOut(message: Message): Promise<void>;
  /**
   * An admitted message whose thread was killed before it was placed: true when the queue
   * leaves it to the pump to fail here; false when it stays for its claimer, which refuses it.
   */
  abandon(message: Message): boolean;
  /**
   * There may be room or work: hand out, through the host's `take`, what may start now. `slot`:
   * only a handler slot freed (a handler returned; its outcome is not committed yet).
   */
  schedule(why?: 'slot'): void;
  /** A delivery began (embedded: its entry is marked DISPATCHED; cluster: the claim did it). */
  started(message: Message): Promise<void>;
  /** A delivery ended: its thread's next message for the same listener may go. */
  release(message: Message): void;
  /** Books a delivery's ack with what it caused; cluster: fenced by the claim. */
  ack(message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult>;
  /**
   * An ask's delivery (builtin:human) stops to wait for a person: AWAITING until it expires at
   * `expiresAt` (null: never); cluster: fenced by the claim, which it releases.
   */
  park(message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult>;
  /** Books a delivery's failure, like `ack`. */
  fail(message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult>;
  /**
   * Books a failed try for a retry (see Journal.retried): PENDING again at attempt + 1, not to
   * start before `notBefore`, and placed so (embedded: it waits at the head of its thread on its
   * listener's queue, holding no handler slot; cluster: claimers pass it over until then).
   * The message to count as queued (embedded) or waiting elsewhere; null: the claim was no
   * longer ours (cluster), nothing was written.
   */
  retry(message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message | null>;
  /** Journals FAILED a message the pump refused to deliver (a peer denied, a hop limit, no such listener). */
  refuse(message: Message, reason: FailureReason, error: string): Promise<void>;
  /** Whether a delivery that waited out a store outage may still run here (cluster: its claim was not taken back meanwhile). */
  stillHeld(message: Message): Promise<boolean>;
  /**
   * A thread is held (issue 30) or resumed: a held thread's messages stay where they wait
   * (embedded: on their listeners' queues, not handed out; cluster: PENDING in the store, which
   * every claim passes over, so this only starts a claim round on a resume).
   */
  hold(threadId: string, held: boolean): void;
  /** Takes out every message of a thread waiting in this process (a kill). */
  drainThread(threadId: string): Message[];
  /** Takes out every message waiting in this process for a listener (it was removed). */
  drainListener(name: string): Message[];
  /** How many messages wait in this process for a listener. */
  depth(name: string): number;
  /**
   * How a thread with nothing left in this process ends: embedded, this process is the whole
   * organism, so it is over (`failed`: in error); cluster null: other processes may hold its
   * work, and the store ends it in the transaction of its last outcome.
   */
  endOf(failed: boolean): Extract<ThreadStatus, 'completed' | 'error'> | null;
  /**
   * After a start: threads recorded active that nothing can be running any more (embedded:
   * every one this process does not run; cluster: none, a dead process's claims come back by lease).
   */
  orphans(live: (threadId: string) => boolean): AsyncIterable<ThreadRecord>;
  /** Stores a kill (`live`: this process runs the thread; embedded, its tracker writes it then). */
  recordKill(record: ThreadRecord, live: boolean): Promise<void>;

  /**
   * Per listener, over the whole organism: messages waiting and being delivered. Embedded, the
   * figures are this process's memory and come at once (GET /api/v1/agents then answers without
   * a turn of the event loop); a cluster reads them from its store.
   */
  load(): ReadonlyMap<string, AgentLoad> | Promise<ReadonlyMap<string, AgentLoad>>;
  /** Threads with work queued or in flight, over the whole organism. */
  activeThreads(): Promise<number>;
  /**
   * The processes of the organism. `self` is this process as it describes itself: embedded, it
   * is the whole organism and the list; a cluster lists its store's `workers` table (where this
   * process has its own row).
   */
  workers(self: WorkerRecord): Promise<ProcessList>;
  /** A thread's record as it stands: `live` is this process's view of it (null: not live here). */
  thread(id: string, live: ThreadRecord | null): Promise<ThreadRecord | null>;
}

export type Placement = 'queued' | 'elsewhere' | 'out' | 'unknown';

/** A listener as a queue sees it. */
export interface QueueListener {
  readonly name: string;
  readonly paused: boolean;
  /** Handlers of it running in this process now. */
  readonly running: number;
  /** Deliveries of it in flight in this process (running, or booking their outcome). */
  readonly inFlight: number;
  /** The thread of its latest delivery in flight in this process (null: none). */
  readonly currentThread: string | null;
}

export interface QueueLimits {
  readonly maxConcurrentHandlers: number;
  readonly maxConcurrentPerAgent: number;
}

/** A claim from the store: the thread's record as the claim read it (null: not stored yet), and when the claim was sent (this process's clock). */
export interface Claim {
  readonly thread: ThreadRecord | null;
  readonly claimedAt: number;
}

/** What a queue sees of the pump it feeds. */
export interface QueueHost {
  /** The registered listeners, in the order deliveries rotate over them. */
  listeners(): readonly QueueListener[];
  limits(): QueueLimits;
  /** Handlers running in this process now (what the concurrency limits count). */
  running(): number;
  /** Deliveries in flight in this process now. */
  inFlight(): number;
  /** Whether deliveries may start (running, not stopping). */
  dispatching(): boolean;
  /** The organism's status: a cluster queue claims only while it is running. */
  status(): 'starting' | 'running' | 'stopping' | 'stopped';
  /** A listener by name (undefined: none such here). */
  listener(name: string): QueueListener | undefined;
  /** Starts delivering a message: one queued in this process (claim null), or claimed from the store. */
  take(message: Message, claim: Claim | null): void;
  /** Ids of the messages this process is delivering now. */
  held(): Iterable<string>;
  /** Work moved (started or not): waiters for room or for a drain look again. */
  progress(): void;
  /** Threads live in this process. */
  liveThreads(): number;
  /** The queue took back deliveries other processes held (their lease expired): the host tells its watchers. */
  takenBack(taken: readonly TakenBack[]): void;
  /** Where a queue logs what goes wrong. */
  readonly logger: Logger;
}
