import { createHash } from 'node:crypto';
import type { OrganismConfig } from './types.js';

/**
 * The organism a process runs, as every process of a clustered organism compares it: the loaded
 * configuration (defaults applied) as JSON with sorted keys, and its SHA-256. Handler code is
 * not in it (its identity holds paths and times of one machine); the configuration names
 * every handler it runs.
 */
export interface ConfigFingerprint {
  readonly hash: string;
  /** Canonical JSON (what `config_text` stores, so another process can name a difference). */
  readonly text: string;
}

/**
 * A secret substituted into organism.yaml (`${GITHUB_TOKEN}`, see OrganismConfig.secretVariables)
 * counts as its reference, `${GITHUB_TOKEN}`: the text is stored in the database and named in
 * logs, which must never hold the secret, and each process may have its own.
 */
export function fingerprint(config: OrganismConfig, env: NodeJS.ProcessEnv = process.env): ConfigFingerprint {
  const secrets = (config.secretVariables ?? []).flatMap((name) => {
    const value = env[name];
    return value ? [{ value, reference: `\${${name}}` }] : [];
  });
  // The longest first: a secret that contains another is replaced whole.
  secrets.sort((a, b) => b.value.length - a.value.length);
  const text = JSON.stringify(sorted(config, secrets));
  return { hash: createHash('sha256').update(text).digest('hex').slice(0, 16), text };
}

function sorted(value: unknown, secrets: ReadonlyArray<{ value: string; reference: string }>): unknown {
  if (typeof value === 'string') return secrets.reduce((s, secret) => s.split(secret.value).join(secret.reference), value);
  if (Array.isArray(value)) return value.map((v) => sorted(v, secrets));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sorted(v, secrets);
    }
    return out;
  }
  return value;
}

/** Arrays whose items are told apart by name (a listener moved in the file is not a difference). */
const NAMED = /(^|\.)(listeners|providers|payloads|mcpServers|tokens)$/;

/**
 * The differences between the configuration here and there (canonical texts), each naming
 * where: `listeners[writer].timeoutSeconds: 30 here, 60 in the database's organism`. At most
 * `max`, then how many more.
 */
export function configDifferences(hereText: string, thereText: string, max = 5): string[] {
  const found: string[] = [];
  walk(JSON.parse(hereText) as unknown, JSON.parse(thereText) as unknown, '', found);
  return found.length > max ? [...found.slice(0, max), `and ${found.length - max} more`] : found;
}

function walk(here: unknown, there: unknown, path: string, out: string[]): void {
  if (JSON.stringify(here) === JSON.stringify(there)) return;
  if (Array.isArray(here) && Array.isArray(there) && NAMED.test(path) && [...here, ...there].every(hasName)) {
    const names = [...new Set([...here, ...there].map((x) => (x as { name: string }).name))];
    for (const name of names) {
      const h = here.find((x) => (x as { name: string }).name === name);
      const t = there.find((x) => (x as { name: string }).name === name);
      walk(h, t, `${path}[${name}]`, out);
    }
    return;
  }
  if (isObject(here) && isObject(there)) {
    for (const key of [...new Set([...Object.keys(here), ...Object.keys(there)])].sort()) walk(here[key], there[key], path ? `${path}.${key}` : key, out);
    return;
  }
  out.push(`${path || '(the whole configuration)'}: ${show(here)} here, ${show(there)} in the database's organism`);
}

function hasName(x: unknown): boolean {
  return isObject(x) && typeof x['name'] === 'string';
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function show(v: unknown): string {
  if (v === undefined) return 'absent';
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
