import type { Page } from './page.js';
import type { TextSearch } from './search.js';

/** `waiting` (an extension of the spec's list): nothing runs, and an ask waits for a person (an AWAITING entry). */
export type ThreadStatus = 'active' | 'waiting' | 'completed' | 'error' | 'killed';

export const THREAD_STATUSES: readonly ThreadStatus[] = ['active', 'waiting', 'completed', 'error', 'killed'];

export interface ThreadRecord {
  readonly id: string;
  readonly status: ThreadStatus;
  /** In order of first appearance. */
  readonly participants: readonly string[];
  readonly messageCount: number;
  readonly createdAt: number;
  readonly lastActivity: number;
  readonly error: string | null;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface ThreadQuery {
  readonly status?: ThreadStatus;
  readonly agent?: string;
  /** Threads active at or after this time (ms): their last activity is not earlier. */
  readonly startTime?: number;
  /** Threads created before this time (ms). */
  readonly endTime?: number;
  /** Threads with a message whose payload or error contains this text (among the newest `window` journal entries). */
  readonly text?: TextSearch;
  readonly limit: number;
  readonly offset: number;
}

/** Persists thread records (newest activity first in lists). */
export interface ThreadStore {
  /** Write behind: returns at once; the store commits it (and logs a failure) on its own. */
  put(thread: ThreadRecord): void;
  /**
   * Cluster mode (a store several processes write): records `thread` killed, changing only its
   * status and last activity when it is stored (its counts and participants are the store's,
   * kept by every process's transactions); resolves once committed.
   */
  kill?(thread: ThreadRecord): Promise<void>;
  get(id: string): Promise<ThreadRecord | null>;
  /** The stored records of these ids (missing ones are absent from the map), in one read. */
  getMany(ids: readonly string[]): Promise<Map<string, ThreadRecord>>;
  list(query: ThreadQuery): Promise<Page<ThreadRecord>>;
}
