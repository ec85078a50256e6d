import Database from 'better-sqlite3';
import { chmodSync, readFileSync, renameSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Errors } from '../../errors/catalogue.js';
import { PRIVATE_FILE_MODE } from '../../util/private-files.js';
import { diskFullText } from './disk-space.js';

/** The lock: an always-empty SQLite database on which the holder keeps a write transaction open. */
export const LOCK_FILE = 'organism.lock';
/** The holder's PID, for the message a refused process prints (the lock itself is the kernel's). */
export const PID_FILE = 'organism.pid';

/** How long a refused process waits for a holder that has just taken the lock to write its PID. */
const PID_WAIT_MS = 1_000;

/**
 * Takes the data directory for this process and returns the release function.
 *
 * The lock is held by the operating system, not written down: the holder opens `organism.lock`
 * as a SQLite database and keeps `BEGIN IMMEDIATE` open, which SQLite implements with a POSIX
 * record lock (fcntl) on the file. The kernel drops that lock when the holder exits in any way
 * (kill -9 included), so a start right after a crash is never refused, and a PID reused by
 * another program cannot hold the directory. A live holder makes `BEGIN IMMEDIATE` fail at
 * once with SQLITE_BUSY, in another process or in this one (SQLite tracks its own connections).
 * SQLite rather than flock(2) through a native package: better-sqlite3 is already here, and
 * its locking is what SQLite itself relies on. The file is never written (a transaction that
 * changes nothing writes nothing), so taking the lock needs no disk space, and it is never
 * deleted: deleting a lock file lets two processes lock two different files of one name.
 *
 * Never open `organism.lock` with `fs` in a process that may hold it: closing any descriptor of
 * a file drops every POSIX lock the process has on it.
 */
export function acquireLock(dataDir: string): () => void {
  const file = path.join(dataDir, LOCK_FILE);
  clearLegacyPidFile(file);
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: 0 }); // busy: refuse at once, never wait for the holder
  } catch (err) {
    throw unwritable(dataDir, err);
  }
  try {
    db.pragma('journal_mode = MEMORY'); // a rollback journal file would take disk space; nothing is ever written
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw Errors.STORAGE_LOCKED(dataDir, holderPid(dataDir));
    throw unwritable(dataDir, err);
  }
  const pidFile = path.join(dataDir, PID_FILE);
  try {
    writePidFile(pidFile);
  } catch (err) {
    db.close();
    throw unwritable(dataDir, err);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    // While still holding the lock: after it, the file may already be the next holder's.
    try {
      unlinkSync(pidFile);
    } catch {
      // already gone (the directory was removed)
    }
    db.close();
  };
}

/** The PID in `organism.pid`, waiting briefly when it is missing or names a dead process. */
function holderPid(dataDir: string): number | 'unknown' {
  const deadline = Date.now() + PID_WAIT_MS;
  for (;;) {
    const pid = readPid(path.join(dataDir, PID_FILE));
    if (pid !== null && alive(pid)) return pid;
    if (Date.now() > deadline) return pid ?? 'unknown';
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20); // sleep 20 ms (synchronous open)
  }
}

function readPid(file: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Written beside and renamed over, so a reader never sees half a PID. */
function writePidFile(file: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${process.pid}\n`, { mode: PRIVATE_FILE_MODE });
    chmodSync(tmp, PRIVATE_FILE_MODE);
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never created
    }
    throw err;
  }
}

/**
 * Earlier versions wrote their PID into `organism.lock`. A lock database is always empty, so a
 * non-empty file is such a PID file: emptied, not trusted (its PID may be dead or reused),
 * and not deleted (see acquireLock). Only done to a non-empty file, which no holder has open.
 */
function clearLegacyPidFile(file: string): void {
  try {
    if (statSync(file).size > 0) truncateSync(file, 0);
  } catch {
    // absent: created by the open
  }
}

function unwritable(dataDir: string, err: unknown) {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'SQLITE_FULL') return Errors.STORAGE_UNWRITABLE(dataDir, diskFullText(dataDir));
  return Errors.STORAGE_UNWRITABLE(dataDir, (err as Error).message);
}
