/**
 * One queue system running the bench's durable 3-hop chain of no-op handlers (hop1 -> hop2 ->
 * hop3), driven by bench/children/peers.ts. Every message carries a numeric key; the system
 * reports a key once its final hop's completion has committed.
 */
export type SystemName = 'organism-sqlite' | 'organism-postgres' | 'bullmq' | 'pg-boss' | 'graphile-worker';

export const SYSTEMS: readonly SystemName[] = ['organism-sqlite', 'organism-postgres', 'bullmq', 'pg-boss', 'graphile-worker'];

export interface SystemInput {
  readonly dataDir: string;
  /** PostgreSQL systems: a fresh database for this run. */
  readonly postgresUrl?: string;
  /** BullMQ: the private Redis to use. */
  readonly redisPort?: number;
}

/** Work the client sent, counted in the process (what a statement is: see bench/children/chains/count.ts). */
export interface WorkCounts {
  /** SQL statements (transaction control excluded) or Redis commands (a Lua script is one). */
  readonly statements: number;
  /** Write transactions committed (explicit COMMITs and autocommitted writes); null where there is no such thing (Redis). */
  readonly commits: number | null;
}

export interface ChainSystem {
  /** Enqueues one message per key at hop1; resolves once all are durably accepted. */
  inject(keys: readonly number[]): Promise<void>;
  /** Work sent to the store so far. */
  counts(): WorkCounts;
  /** Resolves once nothing is left waiting in the store (a warm-up has drained). */
  drained(): Promise<void>;
  stop(): Promise<void>;
}

export type SystemFactory = (input: SystemInput, onFinal: (key: number) => void) => Promise<ChainSystem>;

export const HOPS = 3;
/** Worker concurrency for the peers that take one (BullMQ per queue, graphile-worker per pool). */
export const PEER_CONCURRENCY = 10;
/** pg-boss fetches (and completes) jobs in batches of this many. */
export const PGBOSS_BATCH = 50;
