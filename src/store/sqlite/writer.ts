import type Database from 'better-sqlite3';

interface Job {
  run: () => void;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: writes queued within one tick are applied in order in one transaction, and
 * every caller's promise resolves after that commit. A write whose promise is not awaited
 * still lands in order with the writes after it.
 */
export class GroupWriter {
  private queue: Job[] = [];
  private scheduled = false;

  constructor(
    private readonly db: Database.Database,
    private readonly onError: (err: unknown) => void,
  ) {}

  write(run: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Applies everything queued now (also used before reads and at close). */
  flush(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const jobs = this.queue;
    this.queue = [];
    try {
      this.db.transaction(() => {
        for (const job of jobs) job.run();
      })();
    } catch (err) {
      // One bad write must not sink the batch: redo each on its own to find it.
      for (const job of jobs) {
        try {
          this.db.transaction(job.run)();
          job.resolve();
        } catch (jobErr) {
          this.onError(jobErr);
          job.reject(jobErr);
        }
      }
      return;
    }
    for (const job of jobs) job.resolve();
  }
}
