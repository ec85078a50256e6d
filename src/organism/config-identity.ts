import { createHash } from 'node:crypto';
import { sanitizeConfig } from '../config/index.js';
import type { LoadedOrganism } from '../config/types.js';
import type { StoredConfig } from './cluster-link.js';

/**
 * The identity of an organism's configuration across processes: the canonical text of what
 * organism.yaml says (the sanitized config as JSON with sorted keys: no secret, no file time,
 * no machine's path to a handler module) and its SHA-256. Two processes run the same organism
 * when their hashes are equal.
 */
export function configIdentity(loaded: LoadedOrganism): StoredConfig {
  const text = canonicalJson(sanitizeConfig(loaded.config));
  return { hash: createHash('sha256').update(text).digest('hex'), text };
}

/**
 * Where two canonical texts differ, in words: the first `max` differing keys, each with both
 * values (`listeners[writer].timeout: 30 here, 60 in the database`).
 */
export function describeConfigDifference(ours: string, theirs: string, max = 3): string {
  let a: unknown;
  let b: unknown;
  try {
    a = JSON.parse(ours);
    b = JSON.parse(theirs);
  } catch {
    return 'the stored configuration cannot be read';
  }
  const diffs: string[] = [];
  walk(a, b, '', diffs, max + 1);
  if (diffs.length === 0) return 'no difference';
  const shown = diffs.slice(0, max);
  return diffs.length > max ? `${shown.join('; ')}; and more` : shown.join('; ');
}

function walk(a: unknown, b: unknown, at: string, out: string[], max: number): void {
  if (out.length >= max) return;
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) walk(a[key], b[key], at ? `${at}.${key}` : key, out, max);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    // Listeners and providers are lists of named things: matched by name, not by position.
    const named = (x: unknown[]) => x.every((e) => isObject(e) && typeof e['name'] === 'string');
    if (named(a) && named(b)) {
      const byName = (x: unknown[]) => new Map((x as Record<string, unknown>[]).map((e) => [e['name'] as string, e]));
      const ma = byName(a);
      const mb = byName(b);
      for (const name of [...new Set([...ma.keys(), ...mb.keys()])].sort()) walk(ma.get(name), mb.get(name), `${at}[${name}]`, out, max);
      return;
    }
    for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${at}[${i}]`, out, max);
    return;
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  out.push(`${at || 'the configuration'}: ${show(a)} here, ${show(b)} in the database`);
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function show(x: unknown): string {
  if (x === undefined) return 'absent';
  const text = JSON.stringify(x);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** JSON with every object's keys sorted (the same config gives the same text). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}
