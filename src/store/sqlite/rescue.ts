import type Database from 'better-sqlite3';
import { existsSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePrivateFile } from '../../util/private-files.js';

/**
 * Where the rescue copy of a lost data directory goes: beside the directory (its parent
 * survives an `rm -rf` of the directory), or in the temporary directory if the parent went too.
 */
export function rescuePath(dataDir: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const name = `${path.basename(dataDir)}.rescued-${stamp}.db`;
  const parent = path.dirname(dataDir);
  return path.join(existsSync(parent) ? parent : os.tmpdir(), name);
}

/**
 * Copies the open database, deleted or not, into `target` (written beside and renamed, so a
 * reader never sees half a copy; an earlier copy of the same name is replaced). The copy is an
 * ordinary organism database: moved into a data directory as organism.db, the next start
 * recovers it (unfinished deliveries go out again).
 */
export function rescueCopy(db: Database.Database, target: string): void {
  const tmp = `${target}.tmp`;
  rmSync(tmp, { force: true });
  try {
    // Made 0600 first (VACUUM INTO fills an empty file): the copy holds everything the database does.
    ensurePrivateFile(tmp);
    db.prepare('VACUUM INTO ?').run(tmp);
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
