/** A queued write that may carry a check made just before its transaction starts. */
export interface GuardedJob {
  /** An error drops the job: it rejects with it, nothing of it is written. */
  readonly check: (() => Error | null) | undefined;
  reject(err: unknown): void;
}

/**
 * The jobs whose check lets them go now (both stores' group-commit writers, as a batch is
 * about to begin); the others reject with what their check says.
 */
export function wanted<J extends GuardedJob>(jobs: J[]): J[] {
  if (!jobs.some((j) => j.check)) return jobs;
  return jobs.filter((j) => {
    const refused = j.check?.() ?? null;
    if (refused) j.reject(refused);
    return !refused;
  });
}
