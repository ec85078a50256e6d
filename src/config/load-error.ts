import { readFileSync } from 'node:fs';
import path from 'node:path';

/** esbuild's diagnostics (tsx compiles handlers with it): `file:line:col: ERROR: text`. */
const ESBUILD_ERROR = /^(.+?):(\d+):(\d+): ERROR: (.+)$/gm;

export interface CompileError {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
  /** The source line, trimmed (empty when unreadable). */
  readonly source: string;
}

/** The compiler errors in a failed handler import (TypeScript or JavaScript syntax), if any. */
export function compileErrors(err: unknown): CompileError[] {
  const message = err instanceof Error ? err.message : String(err);
  const out: CompileError[] = [];
  for (const m of message.matchAll(ESBUILD_ERROR)) {
    const [, file = '', line = '0', column = '0', text = ''] = m;
    let source = '';
    try {
      source = (readFileSync(file, 'utf8').split(/\r?\n/)[Number(line) - 1] ?? '').trim();
    } catch {
      // the file vanished: the position alone still helps
    }
    out.push({ file, line: Number(line), column: Number(column), text, source });
  }
  return out;
}

/**
 * Why a handler module failed to load, in one line: a syntax error with its file, line and
 * column (esbuild counts columns from 0; editors from 1), else the error's first line.
 */
export function describeLoadError(err: unknown, baseDir: string): string {
  const errors = compileErrors(err);
  const first = errors[0];
  if (first) {
    const where = `${path.relative(baseDir, first.file) || first.file}:${first.line}:${first.column + 1}`;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    return `syntax error at ${where}: ${first.text}${first.source ? ` in \`${first.source}\`` : ''}${more}; fix it and run organism check again`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? message;
}
