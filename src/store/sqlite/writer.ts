import type Database from 'better-sqlite3';
import { wanted } from '../guarded-jobs.js';

/** Joins every group-commit transaction: `begin` as it starts, `commit` just before it commits. */
export interface TransactionHook {
  begin(): void;
  commit(): void;
}

/**
 * A queued write. `alone`: false when it runs in the batch of its tick (with the writes queued
 * beside it), true when the batch failed and each write is redone in a transaction of its own.
 */
export type WriteJob = (alone: boolean) => void;

interface Job {
  run: WriteJob;
  /** Checked as the job's transaction is about to start: an error drops the job (it rejects with it). */
  check: (() => Error | null) | undefined;
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
  private readonly hooks: TransactionHook[] = [];

  constructor(
    private readonly db: Database.Database,
    private readonly onError: (err: unknown) => void,
    /** After each transaction that committed (a full disk has room again). */
    private readonly onCommit: () => void = () => undefined,
  ) {}

  addHook(hook: TransactionHook): void {
    this.hooks.push(hook);
  }

  /** Runs `work` in one transaction that the hooks join. */
  transaction(work: () => void): void {
    this.db.transaction(() => {
      for (const h of this.hooks) h.begin();
      work();
      for (const h of this.hooks) h.commit();
    })();
  }

  write(run: WriteJob, check?: () => Error | null): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ run, check, resolve, reject });
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
    const jobs = wanted(this.queue);
    this.queue = [];
    if (jobs.length === 0) return;
    try {
      this.transaction(() => {
        for (const job of jobs) job.run(false);
      });
    } catch {
      // One bad write must not sink the batch: redo each on its own to find it.
      for (const job of jobs) {
        try {
          this.transaction(() => job.run(true));
          this.onCommit();
          job.resolve();
        } catch (jobErr) {
          this.onError(jobErr);
          job.reject(jobErr);
        }
      }
      return;
    }
    this.onCommit();
    for (const job of jobs) job.resolve();
  }
}
