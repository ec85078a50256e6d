import { checkOrganismReport } from '../config/index.js';
import type { ConfigProblem } from '../config/types.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';

export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}${p.column === null ? '' : `:${p.column}`}`;
  return `${where}: ${p.keyPath ? `${p.keyPath}: ` : ''}${p.message}`;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * `organism check`: validates a config; prints every problem and every warning. Problems make
 * a non-zero exit; warnings (the config loads, but something will not work as meant) do not.
 */
export async function checkCommand(configArg: string | undefined): Promise<number> {
  const { path } = resolveConfigPath(configArg);
  const { problems, warnings } = await checkOrganismReport(path);
  for (const p of problems) process.stderr.write(`${formatProblem(p)}\n`);
  for (const w of warnings) process.stderr.write(`warning: ${formatProblem(w)}\n`);
  if (problems.length === 0) {
    process.stdout.write(`${path}: OK${warnings.length > 0 ? ` (${plural(warnings.length, 'warning')})` : ''}\n`);
    return ExitCode.OK;
  }
  process.stderr.write(`${plural(problems.length, 'problem')} found\n`);
  return ExitCode.CONFIG_INVALID;
}
