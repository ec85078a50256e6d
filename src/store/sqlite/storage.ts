import type { ThreadBudgetSnapshot } from '../../core/budget.js';
import type { ScheduleStore } from '../../core/schedule.js';
import type { WebhookStore } from '../../core/webhook.js';
import Database from 'better-sqlite3';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import type { Logger } from '../../util/logger.js';
import { diskFullText, freeBytes, freeText, LOW_SPACE_BYTES } from './disk-space.js';
import { guarded } from './guard.js';
import { StorageHealth } from './health.js';
import type { StorageProblem } from '../../core/storage.js';
import { SqliteJournal } from './journal.js';
import { SqliteLlmCallStore } from './llm-calls.js';
import { ensurePrivateDir, ensurePrivateFile, makePrivate } from '../../util/private-files.js';
import { acquireLock, LOCK_FILE, PID_FILE } from './lock.js';
import { migrate } from './migrations.js';
import { SqliteBudgetArchive } from './budget-archive.js';
import { SqliteOperatorState } from './operator-state.js';
import { SqliteEraser } from './eraser.js';
import { SqliteScheduleStore, SqliteWebhookStore } from './interop.js';
import { rescueCopy, rescuePath } from './rescue.js';
import { SqliteThreadStore } from './threads.js';
import { SqliteUsageStore } from './usage.js';
import { watchFiles } from './watch.js';
import { GroupWriter } from './writer.js';

export const DATABASE_FILE = 'organism.db';
const PRUNE_INTERVAL_MS = 10 * 60_000;

export interface SqliteStorageOptions {
  readonly dataDir: string;
  readonly retainDays?: number;
  readonly failedRetainDays?: number;
  readonly logger?: Logger;
}

export interface SqliteStorage {
  readonly dataDir: string;
  readonly journal: SqliteJournal;
  readonly threads: SqliteThreadStore;
  readonly usage: SqliteUsageStore;
  readonly llmCalls: SqliteLlmCallStore;
  /** Saved at once (the promise is resolved). */
  readonly budgets: { load(): Promise<ThreadBudgetSnapshot[]>; save(snapshots: ThreadBudgetSnapshot[]): Promise<void>; readonly archive: SqliteBudgetArchive };
  readonly operator: SqliteOperatorState;
  readonly eraser: SqliteEraser;
  readonly schedules: ScheduleStore;
  readonly webhooks: WebhookStore;
  /** What is wrong with the data directory now (full, damaged, deleted), or null. */
  problem(): StorageProblem | null;
  /**
   * Called once if the database file or its lock is deleted or replaced while open. A rescue
   * copy of the database is written at once, and again at close (see rescue.ts).
   */
  onLost(listener: (error: OrganismError) => void): void;
  close(): void;
}

/**
 * Opens the organism's data directory: takes its lock, opens (or creates) the database in WAL
 * mode and applies migrations. Anything wrong (locked, unwritable, corrupt, full) is a clear
 * StorageError: the organism never runs on silently without persistence.
 *
 * Durability: WAL with synchronous=NORMAL. A commit is in the WAL file (the operating
 * system's cache) before it returns, so it survives the process being killed at any instant
 * (kill -9, crash, OOM); only a power loss or kernel crash could lose the last commits.
 */
export function openSqliteStorage(options: SqliteStorageOptions): SqliteStorage {
  const dataDir = path.resolve(options.dataDir);
  try {
    ensurePrivateDir(dataDir);
    accessSync(dataDir, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw Errors.STORAGE_UNWRITABLE(dataDir, code === 'ENOSPC' ? diskFullText(path.dirname(dataDir)) : (code ?? (err as Error).message));
  }
  const release = acquireLock(dataDir);
  const file = path.join(dataDir, DATABASE_FILE);
  let db: Database.Database | undefined;
  try {
    // Created 0600 before SQLite opens it: its -wal and -shm are then created with that mode too.
    ensurePrivateFile(file);
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    // A file that is not a database fails here (header, schema). No whole-file check at start:
    // quick_check reads every page (seconds at a million journal rows, measured by bench
    // scenario 5); damage deeper in the file surfaces as STORAGE_CORRUPT where it is read.
    migrate(db);
    // Files an earlier version (or another umask) left readable: private from now on.
    makePrivate(file, `${file}-wal`, `${file}-shm`, path.join(dataDir, LOCK_FILE), path.join(dataDir, PID_FILE));
  } catch (err) {
    try {
      db?.close(); // a half-opened database must not keep its files open
    } catch {
      // closing is best effort; the original error is the one to report
    }
    release();
    throw storageError(file, err);
  }
  const logger = options.logger;
  const health = new StorageHealth(dataDir, logger);
  // Every failure leaves the stores as a catalogue error, and the health hears of each once.
  const map = (err: unknown): OrganismError => {
    const error = storageError(file, err);
    health.noted(error);
    return error;
  };
  const report = (err: unknown) => void map(err);
  // After a commit, thread records whose write failed (a full disk) are written again at once.
  let threadStore: SqliteThreadStore | null = null;
  const writer = new GroupWriter(db, report, () => {
    health.wrote();
    threadStore?.afterCommit();
  });
  const journal = guarded(
    new SqliteJournal(db, writer, {
      retainDays: options.retainDays ?? 7,
      failedRetainDays: options.failedRetainDays ?? 30,
    }),
    map,
  );
  threadStore = new SqliteThreadStore(db, writer);
  const threads = guarded(threadStore, map);
  const usage = guarded(new SqliteUsageStore(db, report), map);
  const pruneTimer = setInterval(() => {
    journal.prune().catch(report);
  }, PRUNE_INTERVAL_MS).unref();
  setImmediate(() => journal.prune().catch(report)); // catch up after downtime

  // The files deleted or replaced under the open database: what is on the unlinked inode
  // (everything acknowledged) is copied out now, and again at close after the drain.
  const lostListeners: Array<(error: OrganismError) => void> = [];
  let rescueTo: string | null = null;
  const rescue = (when: string) => {
    if (!rescueTo) return;
    try {
      rescueCopy(db, rescueTo);
      logger?.warn({ rescue: rescueTo, dataDir }, `${when}: the database is saved to ${rescueTo}; move it into a data directory as organism.db to deliver what it holds`);
    } catch (err) {
      logger?.error({ err, rescue: rescueTo, dataDir }, `saving the lost database to ${rescueTo} failed`);
    }
  };
  const stopWatching = watchFiles([file, path.join(dataDir, LOCK_FILE)], (gone, how) => {
    rescueTo = rescuePath(dataDir);
    const error = Errors.STORAGE_LOST(dataDir, gone, how, rescueTo);
    health.lost(error);
    rescue('data directory lost');
    for (const listener of lostListeners) listener(error);
  });

  let closed = false;
  return {
    dataDir,
    journal,
    threads,
    usage,
    llmCalls: guarded(new SqliteLlmCallStore(db, writer), map),
    operator: guarded(new SqliteOperatorState(db), map),
    eraser: guarded(new SqliteEraser(db, writer), map),
    schedules: guarded(new SqliteScheduleStore(db), map),
    webhooks: guarded(new SqliteWebhookStore(db), map),
    problem: () => health.problem(),
    onLost: (listener) => void lostListeners.push(listener),
    budgets: guarded(
      {
        load: () => Promise.resolve((db.prepare('SELECT data FROM budgets').all() as Array<{ data: string }>).map((r) => JSON.parse(r.data) as ThreadBudgetSnapshot)),
        archive: guarded(new SqliteBudgetArchive(db), map),
        save: (snapshots) => {
          db.transaction(() => {
            db.prepare('DELETE FROM budgets').run();
            const insert = db.prepare('INSERT INTO budgets (thread_id, data) VALUES (?, ?)');
            for (const s of snapshots) insert.run(s.threadId, JSON.stringify(s));
          })();
          return Promise.resolve();
        },
      },
      map,
    ),
    close() {
      if (closed) return;
      closed = true;
      clearInterval(pruneTimer);
      stopWatching();
      threadStore?.writeDeferred();
      writer.flush();
      usage.close();
      rescue('closing the lost data directory');
      db.close();
      release();
    },
  };
}

/** Maps SQLite failures to the catalogue's storage errors. */
export function storageError(file: string, err: unknown): OrganismError {
  if (err instanceof OrganismError) return err;
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message ?? String(err);
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || /not a database|malformed/i.test(message)) return Errors.STORAGE_CORRUPT(file, message);
  // Refused for what it writes (a constraint, a datatype mismatch, a value past SQLite's limits): writing it again cannot succeed.
  if (code.startsWith('SQLITE_CONSTRAINT') || code === 'SQLITE_MISMATCH' || code === 'SQLITE_TOOBIG') return Errors.STORAGE_REJECTED(file, `${message} (${code})`);
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'SQLITE_PERM') return Errors.STORAGE_UNWRITABLE(path.dirname(file), message);
  // SQLite reports a write refused for want of space as SQLITE_FULL, or as a bare I/O error
  // when it hits ENOSPC growing the WAL or its shared-memory file: ask the file system.
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) {
    const free = freeBytes(path.dirname(file));
    if (code === 'SQLITE_FULL' || (free !== null && free < LOW_SPACE_BYTES)) return Errors.STORAGE_FULL(path.dirname(file), freeText(path.dirname(file)));
  }
  return Errors.STORAGE_FAILED(file, message);
}
