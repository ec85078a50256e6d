import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temporary directory for one round's data (removed with `cleanup`). */
export function tempDir(label: string): string {
  return mkdtempSync(path.join(process.env['BENCH_TMPDIR'] ?? os.tmpdir(), `organism-bench-${label}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
