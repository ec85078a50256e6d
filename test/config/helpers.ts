import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigInvalidError, loadOrganismFromString, type ConfigProblem } from '../../src/config/index.js';

export const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
/** A config "file" that sits beside the fixture handler modules. */
export const CONFIG_PATH = path.join(FIXTURES, 'organism.yaml');

/**
 * Strips the common indentation and the first newline, so line 1 is the first line of YAML.
 * Interpolated blocks are written at column 0 and shifted to the template's indentation.
 */
export function y(strings: TemplateStringsArray, ...values: unknown[]): string {
  const base = /^\n( *)/.exec(strings[0] ?? '')?.[1] ?? '';
  const text = strings.reduce((acc, s, i) => acc + s + (i < values.length ? String(values[i]).replace(/\n/g, `\n${base}`) : ''), '');
  const lines = text
    .replace(/^\n/, '')
    .replace(/\n\s*$/, '')
    .split('\n');
  return `${lines.map((l) => (l.startsWith(base) ? l.slice(base.length) : l.trimStart())).join('\n')}\n`;
}

/** The problems a config text has (empty when it loads). */
export async function problemsOf(yamlText: string, configPath = CONFIG_PATH): Promise<ConfigProblem[]> {
  try {
    await loadOrganismFromString(yamlText, configPath);
    return [];
  } catch (err) {
    if (err instanceof ConfigInvalidError) return [...err.problems];
    throw err;
  }
}
