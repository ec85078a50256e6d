import { statfsSync } from 'node:fs';

/** Below this much free space an I/O error is taken for a full disk. */
export const LOW_SPACE_BYTES = 1 << 20;

/** Bytes available to this process on the file system holding `dir`, or null when unknown. */
export function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

/** "the disk is full (N bytes free)", for error details. */
export function diskFullText(dir: string): string {
  const free = freeBytes(dir);
  return `the disk is full${free === null ? '' : ` (${free} bytes free)`}`;
}

/** "N bytes" free on the file system holding `dir` ("unknown" when it cannot be asked). */
export function freeText(dir: string): string {
  const free = freeBytes(dir);
  return free === null ? 'unknown' : `${free} bytes`;
}
