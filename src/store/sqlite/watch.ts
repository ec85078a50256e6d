import { statSync } from 'node:fs';

/** How often the files are looked at: two stat calls, so an idle server stays idle. */
export const WATCH_INTERVAL_MS = 1_000;

/**
 * Calls `onGone` once if one of `files` is deleted or replaced (another file under its name:
 * a new device or inode number). The process keeps the old files open, so without this it
 * would go on writing to an unlinked inode, acknowledging messages no restart would find, and
 * a second process could lock the new files of the same directory. Returns the stop function.
 */
export function watchFiles(files: readonly string[], onGone: (file: string, how: 'deleted' | 'replaced') => void): () => void {
  const identity = (file: string) => {
    const s = statSync(file, { throwIfNoEntry: false, bigint: true });
    return s ? `${s.dev}:${s.ino}` : null;
  };
  const opened = files.map(identity);
  const timer = setInterval(() => {
    for (let i = 0; i < files.length; i++) {
      let now: string | null;
      try {
        now = identity(files[i]!);
      } catch {
        continue; // unreadable for a moment (EACCES, EIO): judged on the next look
      }
      if (now === opened[i]) continue;
      clearInterval(timer);
      onGone(files[i]!, now === null ? 'deleted' : 'replaced');
      return;
    }
  }, WATCH_INTERVAL_MS).unref();
  return () => clearInterval(timer);
}
