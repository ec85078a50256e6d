import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';

/**
 * The data directory holds full prompts and answers (the journal, recorded LLM calls) and the
 * operator token: what the server creates there is for its own user only, whatever the umask
 * (modes given at creation are masked by it, so they are set again explicitly).
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) unless it exists: a directory created here is 0700. Returns whether it was created. */
export function ensurePrivateDir(dir: string): boolean {
  if (existsSync(dir)) return false;
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  chmodSync(dir, PRIVATE_DIR_MODE);
  return true;
}

/** An empty `file` created 0600 unless it exists; either way it ends 0600 (SQLite gives its -wal and -shm the database file's mode). */
export function ensurePrivateFile(file: string): void {
  if (!existsSync(file)) {
    try {
      writeFileSync(file, '', { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  chmodSync(file, PRIVATE_FILE_MODE);
}

/** Sets 0600 on each of `files` that exists (by path: no descriptor is opened, so no lock is dropped). */
export function makePrivate(...files: string[]): void {
  for (const file of files) {
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** The mode of `dir` (octal, e.g. "755") when users other than its owner have any permission on it; null otherwise or when absent. */
export function openToOthers(dir: string): string | null {
  try {
    const mode = statSync(dir).mode & 0o777;
    return (mode & 0o077) !== 0 ? mode.toString(8) : null;
  } catch {
    return null;
  }
}
