import { InvalidArgumentError } from 'commander';
import { Errors } from '../errors/catalogue.js';
import type { StoreChoice } from './store-option.js';

/** The command-line flags of a process of a clustered organism (serve and worker). */
export interface ClusterFlags {
  /** serve only: `--handlers on|off` (default on). */
  readonly handlers?: 'on' | 'off';
  readonly concurrency?: number;
  readonly name?: string;
  readonly leaseSeconds?: number;
  /** serve only: `--exclusive`, this process owns the PostgreSQL schema; none of the above with it (resolves to null: no cluster). */
  readonly exclusive?: boolean;
}

/** How this process takes part, for openPostgresStorage's `cluster` (null: embedded SQLite). */
export interface ClusterSettings {
  readonly kind: 'serve' | 'worker';
  readonly handlers: boolean;
  readonly concurrency: number | null;
  readonly name?: string;
  readonly leaseMs: number;
}

export const LEASE_ENV = 'ORGANISM_LEASE_SECONDS';
const DEFAULT_LEASE_SECONDS = 30;

/** `--concurrency`: a whole number of handlers from 1 up. */
export function concurrencyOption(value: string): number {
  const n = Number(value);
  if (!/^[1-9][0-9]*$/.test(value) || n > 100_000) throw new InvalidArgumentError('expected a whole number of handlers from 1 to 100000');
  return n;
}

/** `--lease-seconds`: how long a silent process keeps its claims (0.3 s to 1 hour). */
export function leaseOption(value: string): number {
  const n = Number(value);
  if (!/^(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(value) || n < 0.3 || n > 3_600) throw new InvalidArgumentError('expected seconds from 0.3 to 3600 as a decimal number (e.g. 30 or 2.5)');
  return n;
}

/**
 * Checks the cluster-mode flags against the store: a worker, `--handlers`, `--concurrency`,
 * `--name` and `--lease-seconds` need PostgreSQL (throws SHARED_STORE_REQUIRED: the CLI exits
 * USAGE). `--lease-seconds` falls back to ORGANISM_LEASE_SECONDS, then 30 s.
 */
export function resolveCluster(command: 'serve' | 'worker', store: StoreChoice, flags: ClusterFlags, env: NodeJS.ProcessEnv = process.env): ClusterSettings | null {
  if (store.kind !== 'postgres') {
    if (command === 'worker') throw Errors.SHARED_STORE_REQUIRED('organism worker');
    const given = (['handlers', 'concurrency', 'name', 'leaseSeconds'] as const).filter((k) => flags[k] !== undefined);
    if (flags.exclusive) throw new Error("--exclusive needs a PostgreSQL store (--store postgres://user@host/db, or ORGANISM_STORE): the embedded SQLite store is one process's already");
    if (given.length > 0) throw Errors.SHARED_STORE_REQUIRED(given.map((k) => `--${k === 'leaseSeconds' ? 'lease-seconds' : k}`).join(', '));
    return null;
  }
  if (flags.exclusive) {
    const cluster = (['handlers', 'concurrency', 'name', 'leaseSeconds'] as const).filter((k) => flags[k] !== undefined);
    if (cluster.length > 0)
      throw new Error(
        `--exclusive cannot go with ${cluster.map((k) => `--${k === 'leaseSeconds' ? 'lease-seconds' : k}`).join(', ')}: those are for a cluster's processes, and --exclusive runs no cluster`,
      );
    return null;
  }
  let leaseSeconds = flags.leaseSeconds;
  if (leaseSeconds === undefined && env[LEASE_ENV]) {
    try {
      leaseSeconds = leaseOption(env[LEASE_ENV]!);
    } catch (err) {
      throw new Error(`${LEASE_ENV}: ${(err as Error).message}`);
    }
  }
  return {
    kind: command,
    handlers: command === 'worker' || flags.handlers !== 'off',
    concurrency: flags.concurrency ?? null,
    ...(flags.name !== undefined ? { name: flags.name } : {}),
    leaseMs: Math.round((leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000),
  };
}
