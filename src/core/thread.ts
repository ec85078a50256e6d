import type { Page } from './page.js';
import type { TextSearch } from './search.js';

/**
 * `waiting` (an extension of the spec's list): nothing runs, and an ask waits for a person (an AWAITING entry).
 * `held` (issue 30): an operator or the loop breaker holds the thread; its deliveries stay
 * PENDING until it is resumed. Never stored in a thread record: a view of an unfinished
 * (active or waiting) thread with a hold (see ThreadHold), taking precedence over `waiting`.
 */
export type ThreadStatus = 'active' | 'waiting' | 'held' | 'completed' | 'error' | 'killed';

export const THREAD_STATUSES: readonly ThreadStatus[] = ['active', 'waiting', 'held', 'completed', 'error', 'killed'];

/** Why a thread is held: an operator's pause, or one of the loop breaker's rules. */
export type HoldRule = 'operator' | 'repeat' | 'cycle' | 'velocity';

/**
 * A thread's hold (issue 30), kept by the operator state store across restarts and shared by
 * every process of a cluster. A resumed thread keeps its row (`held` false): the loop breaker
 * counts only traffic after `resumedAt`, its limits multiplied by `limitFactor`.
 */
export interface ThreadHold {
  readonly threadId: string;
  readonly held: boolean;
  readonly rule: HoldRule;
  /** Why, in words (an operator's reason, or the loop breaker's finding). */
  readonly reason: string;
  /** The loop breaker's evidence (edges, counts, hashes), null for an operator's pause. */
  readonly evidence: unknown;
  /** Who held it: a token's name, or `loop_guard`. */
  readonly by: string;
  readonly heldAt: number;
  readonly resumedAt: number | null;
  readonly resumedBy: string | null;
  /** The loop breaker's limits for this thread are multiplied by this (a resume may raise them). */
  readonly limitFactor: number;
}

/** What an erasure (DELETE /threads/{id}) replaced by tombstones, by whom and when. */
export interface ThreadErasure {
  readonly threadId: string;
  readonly by: string;
  readonly at: number;
  /** Journal entries whose payload (and error, notes, approval) became tombstones. */
  readonly messages: number;
  /** Recorded LLM calls whose prompts and answers became tombstones. */
  readonly llmCalls: number;
  /** Recorded tool calls whose arguments and results became tombstones. */
  readonly toolCalls: number;
  /** Recorded events (cluster relay bodies) removed. */
  readonly events: number;
}

/** What an erased payload or text reads as. */
export const ERASED = '[erased]';

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
  /** A view's overlay (never stored with the record): the thread's hold, if it has one (see ThreadHold). */
  readonly hold?: ThreadHold | null;
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
