import type { EventBus } from '../events/bus.js';
import type { ThreadRecord, ThreadStatus, ThreadStore } from '../core/thread.js';
import type { Cancellation } from './cancellation.js';

/** A thread with work queued or in flight, held in memory until it drains. */
export interface LiveThread {
  readonly id: string;
  status: ThreadStatus;
  participants: string[];
  messageCount: number;
  readonly createdAt: number;
  lastActivity: number;
  error: string | null;
  /** A delivery of this thread failed since it was last (re)activated. */
  failed: boolean;
  metadata: Readonly<Record<string, string>>;
  queued: number;
  inFlight: number;
  /** Its deliveries' cancellations (a kill cuts them all short). */
  readonly cancellations: Set<Cancellation>;
}

/** Kills remembered (a claim in flight outlives a kill by a round trip; these are hours of kills). */
const KILLED_KEPT = 10_000;

/**
 * Tracks live threads and writes their records to the thread store. Updates are coalesced per
 * tick: many messages of one thread in a burst produce one store write and one event.
 */
export class ThreadTracker {
  private readonly live = new Map<string, LiveThread>();
  /**
   * Threads killed here or announced killed by another process, newest last (a killed thread
   * stays killed: nothing is ever taken out but the oldest, past KILLED_KEPT). Cluster mode: a
   * claim sent before a kill committed comes back with the thread as it was then (active), so
   * the claimer checks this too before it delivers.
   */
  private readonly killed = new Set<string>();
  private readonly dirty = new Set<LiveThread>();
  private flushScheduled = false;

  constructor(
    private readonly store: ThreadStore,
    private readonly bus: EventBus,
  ) {}

  get(id: string): LiveThread | undefined {
    return this.live.get(id);
  }

  markKilled(id: string): void {
    this.killed.delete(id);
    this.killed.add(id);
    if (this.killed.size > KILLED_KEPT) this.killed.delete(this.killed.values().next().value!);
  }

  /** Killed as far as this process has heard (see `killed`). */
  wasKilled(id: string): boolean {
    return this.killed.has(id);
  }

  get activeCount(): number {
    return this.live.size;
  }

  liveThreads(): IterableIterator<LiveThread> {
    return this.live.values();
  }

  /** Creates a live thread, or revives a stored one (a new message into an idle thread). */
  activate(id: string, now: number, metadata: Readonly<Record<string, string>>, stored: ThreadRecord | null): LiveThread {
    const existing = this.live.get(id);
    if (existing) return existing;
    // A thread killed since `stored` was read stays killed.
    const status: ThreadStatus = this.killed.has(id) ? 'killed' : 'active';
    const thread: LiveThread = stored
      ? {
          id,
          status,
          participants: [...stored.participants],
          messageCount: stored.messageCount,
          createdAt: stored.createdAt,
          lastActivity: now,
          error: null,
          failed: false,
          metadata: { ...stored.metadata, ...metadata },
          queued: 0,
          inFlight: 0,
          cancellations: new Set(),
        }
      : {
          id,
          status,
          participants: [],
          messageCount: 0,
          createdAt: now,
          lastActivity: now,
          error: null,
          failed: false,
          metadata,
          queued: 0,
          inFlight: 0,
          cancellations: new Set(),
        };
    this.live.set(id, thread);
    const record = toRecord(thread);
    // A thread recovered at boot is usually stored active already: rewriting it would only move
    // lastActivity, which its first delivery writes anyway (10k recovered threads: ~0.3 s of boot).
    if (!(stored?.status === 'active' && stored.error === null && sameEntries(stored.metadata, thread.metadata))) this.store.put(record);
    this.bus.emit(stored ? { type: 'thread_updated', thread: record } : { type: 'thread_created', thread: record });
    return thread;
  }

  addParticipant(thread: LiveThread, name: string): void {
    if (!thread.participants.includes(name)) thread.participants.push(name);
  }

  touch(thread: LiveThread): void {
    this.dirty.add(thread);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes every changed thread now (also called on stop). */
  flush(): void {
    this.flushScheduled = false;
    for (const thread of this.dirty) {
      const record = toRecord(thread);
      this.store.put(record);
      this.bus.emit({ type: 'thread_updated', thread: record });
    }
    this.dirty.clear();
  }

  /** A thread that drained or was killed leaves memory; its record stays in the store. */
  retire(thread: LiveThread): void {
    this.live.delete(thread.id);
    this.dirty.delete(thread);
    // Written at once: the store is the only record of the thread from now on.
    const record = toRecord(thread);
    this.store.put(record);
    this.bus.emit({ type: 'thread_updated', thread: record });
  }

  snapshot(thread: LiveThread): ThreadRecord {
    return toRecord(thread);
  }
}

export function toRecord(thread: LiveThread): ThreadRecord {
  return {
    id: thread.id,
    status: thread.status,
    participants: [...thread.participants],
    messageCount: thread.messageCount,
    createdAt: thread.createdAt,
    lastActivity: thread.lastActivity,
    error: thread.error,
    metadata: thread.metadata,
  };
}

function sameEntries(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
