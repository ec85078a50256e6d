/**
 * The side-effect log of the crash-safety workloads (test/crash and chaos/): handlers record
 * every run, an effect deduplicated by `ctx.messageId`, and a violation when the journal had
 * the delivery ACKED already. It lives in its own SQLite file, outside the organism's data
 * directory: it plays the external system a handler writes to, so it must survive (and never
 * share) the organism's storage faults.
 */
import Database from 'better-sqlite3';

export const EFFECTS_FILE = 'effects.db';

export class EffectLog {
  private readonly db: Database.Database;
  private readonly logRun: Database.Statement;
  private readonly violation: Database.Statement;
  private readonly effect: Database.Statement;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS effects (message_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS runs (message_id TEXT NOT NULL, listener TEXT NOT NULL, attempt INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS violations (message_id TEXT NOT NULL, listener TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS effects_thread ON effects(thread_id)`);
    this.logRun = this.db.prepare('INSERT INTO runs (message_id, listener, attempt) VALUES (?, ?, ?)');
    this.violation = this.db.prepare('INSERT INTO violations (message_id, listener) VALUES (?, ?)');
    this.effect = this.db.prepare('INSERT OR IGNORE INTO effects (message_id, thread_id) VALUES (?, ?)');
  }

  /** Records a handler run; `alreadyAcked`: the journal said ACKED when the run started. */
  run(listener: string, messageId: string, attempt: number, alreadyAcked: boolean): void {
    if (alreadyAcked) this.violation.run(messageId, listener);
    this.logRun.run(messageId, listener, attempt);
  }

  /** The side effect, deduplicated by the delivery's message id (its idempotency key). */
  applyEffect(messageId: string, threadId: string): void {
    this.effect.run(messageId, threadId);
  }

  close(): void {
    this.db.close();
  }
}

export interface EffectsView {
  /** Runs of deliveries the journal had already ACKED. */
  readonly violations: ReadonlyArray<{ messageId: string; listener: string }>;
  /** Effects per thread id. */
  readonly effectsByThread: ReadonlyMap<string, number>;
  /** Handler runs per message id. */
  readonly runsByMessage: ReadonlyMap<string, number>;
}

/** Reads the log (read-only: the writer may still be running). */
export function readEffects(file: string, threadIds?: readonly string[]): EffectsView {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const violations = db.prepare('SELECT message_id AS messageId, listener FROM violations').all() as Array<{ messageId: string; listener: string }>;
    const effectsByThread = new Map<string, number>();
    const runsByMessage = new Map<string, number>();
    if (threadIds) {
      const effectsOf = db.prepare('SELECT COUNT(*) AS n FROM effects WHERE thread_id = ?');
      for (const t of threadIds) effectsByThread.set(t, (effectsOf.get(t) as { n: number }).n);
    } else {
      for (const r of db.prepare('SELECT thread_id AS t, COUNT(*) AS n FROM effects GROUP BY thread_id').all() as Array<{ t: string; n: number }>) {
        effectsByThread.set(r.t, r.n);
      }
      for (const r of db.prepare('SELECT message_id AS m, COUNT(*) AS n FROM runs GROUP BY message_id').all() as Array<{ m: string; n: number }>) {
        runsByMessage.set(r.m, r.n);
      }
    }
    return { violations, effectsByThread, runsByMessage };
  } finally {
    db.close();
  }
}
