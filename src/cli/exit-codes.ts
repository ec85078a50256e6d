/** Process exit codes of the `organism` command (documented in the README). */
export const ExitCode = {
  OK: 0,
  /** Unexpected failure. */
  FAILURE: 1,
  /** Bad command line (also: `worker`, `--handlers`, `--concurrency`, `--name`, `--lease-seconds`, `--exclusive` without a PostgreSQL store; `--exclusive` with one of the others). */
  USAGE: 2,
  /** organism.yaml is invalid (every problem is printed), or a worker's differs from the organism its database runs, or (`check --probe`) an MCP server could not be started or reached, or (`check` in a TypeScript project) a handler module fails to type-check. */
  CONFIG_INVALID: 3,
  /** The data directory is locked by another process, unwritable, or its database is corrupt; the PostgreSQL store unreachable, or its schema held (`--exclusive`) or shared (a cluster) against this process. */
  STORAGE: 4,
  /** The HTTP port could not be bound, or the bind address was refused. */
  LISTEN: 5,
  /** `run --once`: a thread it started ended in `error` or was killed. */
  THREAD_FAILED: 6,
  /** `replay`: a cassette regressed under the configuration given. */
  REPLAY_REGRESSION: 7,
  /** Internal: a server process asks its supervisor for a restart. */
  RESTART: 75,
} as const;
