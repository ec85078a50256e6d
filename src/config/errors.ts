import { Errors, format, OrganismError } from '../errors/catalogue.js';
import type { ConfigProblem } from './types.js';

/** `file:line:column: key.path: message`, the one-line form of a problem. */
export function formatConfigProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}${p.column === null ? '' : `:${p.column}`}`;
  return `${where}: ${p.keyPath ? `${p.keyPath}: ` : ''}${p.message}`;
}

/** Thrown by the loader when a config has problems; carries every one of them. */
export class ConfigInvalidError extends OrganismError {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const count = `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
    const lines = problems.map((p) => `\n  ${formatConfigProblem(p)}`).join('');
    super(Errors.CONFIG_INVALID, format(Errors.CONFIG_INVALID.template, [`${count}${lines}`]), problems);
    this.name = 'ConfigInvalidError';
    this.problems = problems;
  }
}
