import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Esbuild from 'esbuild';

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

/** esbuild, as tsx (which compiles handlers with it) depends on it: no dependency of our own. */
function esbuild(): typeof Esbuild {
  return createRequire(import.meta.resolve('tsx/esm/api'))('esbuild') as typeof Esbuild;
}

const LOADERS: Readonly<Record<string, Esbuild.Loader>> = { '.js': 'js', '.mjs': 'js', '.cjs': 'js', '.jsx': 'jsx', '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.tsx': 'tsx' };

/**
 * Node's own loader reports a syntax error in an ES module (plain JavaScript in a
 * \`"type": "module"\` project, which tsx leaves to Node) with its text only, no file or line.
 * The files the import reached are parsed again with esbuild to find where it is.
 */
export function locateSyntaxError(err: unknown, files: readonly string[]): CompileError[] {
  if (!(err instanceof SyntaxError) || compileErrors(err).length > 0) return [];
  for (const file of files) {
    const loader = LOADERS[path.extname(file)];
    if (!loader) continue;
    let code: string;
    try {
      code = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    try {
      esbuild().transformSync(code, { loader, sourcefile: file, format: loader === 'js' && file.endsWith('.cjs') ? 'cjs' : 'esm', logLevel: 'silent' });
    } catch (failure) {
      const errors = (failure as { errors?: Esbuild.Message[] }).errors ?? [];
      const found = errors.flatMap((m) => (m.location ? [{ file, line: m.location.line, column: m.location.column, text: m.text, source: m.location.lineText.trim() }] : []));
      if (found.length > 0) return found;
    }
  }
  return [];
}

/**
 * Why a handler module failed to load, in one line: a syntax error with its file, line and
 * column (esbuild counts columns from 0; editors from 1), else the error's first line.
 */
export function describeLoadError(err: unknown, baseDir: string, files: readonly string[] = []): string {
  const reported = compileErrors(err);
  const errors = reported.length > 0 ? reported : locateSyntaxError(err, files);
  const first = errors[0];
  if (first) {
    const where = `${path.relative(baseDir, first.file) || first.file}:${first.line}:${first.column + 1}`;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    return `syntax error at ${where}: ${first.text}${first.source ? ` in \`${first.source}\`` : ''}${more}; fix it and run organism check again`;
  }
  const message = err instanceof Error ? err.message : String(err);
  const text = message.split('\n')[0] ?? message;
  const missing = /^Cannot find (?:module|package) '([^']+)'/.exec(text)?.[1];
  if (missing !== undefined) {
    if (missing.startsWith('.') || path.isAbsolute(missing)) return `${text}; fix the import path`;
    const name = missing.startsWith('@') ? missing.split('/').slice(0, 2).join('/') : (missing.split('/')[0] ?? missing);
    return `${text}; install it beside the config (npm install ${name} in ${baseDir}) or fix the import`;
  }
  // No location here: stack lines of the compiled module need not match the source's lines.
  return `${text} (while the module loaded); fix the module's top-level code`;
}
