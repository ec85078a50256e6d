import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Errors } from '../../errors/catalogue.js';
import { diskFullText } from './disk-space.js';

export const LOCK_FILE = 'organism.lock';

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // not there
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

/**
 * Takes the data directory for this process: a lock file created exclusively, holding our PID.
 * A lock left by a process that no longer exists is taken over. Returns the release function.
 */
export function acquireLock(dataDir: string): () => void {
  const file = path.join(dataDir, LOCK_FILE);
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, String(process.pid));
      } catch (err) {
        unlinkQuietly(file); // ours, but empty (a full disk): leave nothing behind
        throw err;
      } finally {
        closeSync(fd);
      }
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') {
        throw Errors.STORAGE_UNWRITABLE(dataDir, code === 'ENOSPC' ? diskFullText(dataDir) : (err as Error).message);
      }
      let holder = Number.NaN;
      try {
        holder = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
      } catch {
        // unreadable: treat as stale
      }
      if (Number.isInteger(holder) && holder !== process.pid && alive(holder)) throw Errors.STORAGE_LOCKED(dataDir, holder);
      try {
        unlinkSync(file); // stale: its process is gone
      } catch {
        // raced with another starter; try again
      }
    }
  }
  throw Errors.STORAGE_LOCKED(dataDir, 'unknown');
}
