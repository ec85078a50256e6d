import { checkOrganism } from '../config/index.js';
import type { ConfigProblem } from '../config/types.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';

export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}${p.column === null ? '' : `:${p.column}`}`;
  return `${where}: ${p.keyPath ? `${p.keyPath}: ` : ''}${p.message}`;
}

/** `organism check`: validates a config; prints every problem; non-zero exit when any. */
export async function checkCommand(configArg: string | undefined): Promise<number> {
  const { path } = resolveConfigPath(configArg);
  const problems = await checkOrganism(path);
  if (problems.length === 0) {
    process.stdout.write(`${path}: OK\n`);
    return ExitCode.OK;
  }
  for (const p of problems) process.stderr.write(`${formatProblem(p)}\n`);
  process.stderr.write(`${problems.length} problem${problems.length === 1 ? '' : 's'} found\n`);
  return ExitCode.CONFIG_INVALID;
}
