import { stringify } from 'yaml';
import type { OrganismConfig } from './types.js';
import { sanitizeConfig } from './sanitize.js';

/** Keys of the sanitized view whose organism.yaml name is not just the snake_case form. */
const RENAMED: Record<string, string> = { mockLatencyMs: 'latency_ms' };
const snake = (key: string): string => RENAMED[key] ?? key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Maps whose keys are the operator's own names (model prefixes, listener names, tool arguments, a schedule's payload): kept as written. */
const OWN_KEYS = new Set(['pricing', 'script', 'arguments', 'payload']);

function snakeKeys(value: unknown, ownKeys = false): unknown {
  if (Array.isArray(value)) return value.map((v) => snakeKeys(v));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      const name = ownKeys ? k : snake(k);
      // Inside an own-keys map the entries' own fields are organism.yaml keys again (pricing's
      // `cache_read`), except a mock script's steps and a call's arguments, which are the operator's.
      if (OWN_KEYS.has(k) && !ownKeys) return [name, k === 'pricing' ? mapValues(v, (x) => snakeKeys(x)) : v];
      return [name, snakeKeys(v)];
    }),
  );
}

function mapValues(value: unknown, fn: (v: unknown) => unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fn(v)]));
}

interface SanitizedField {
  name: string;
  type: string;
  optional: boolean;
  description?: string;
}

/**
 * The sanitized configuration (the same view as GET /organism/config: env var names, never
 * values; substitutions expanded, a literal `${` written `$${`) as organism.yaml is written: snake_case keys, `organism: {name}`, payload types as a
 * map of `field: type` (`string?` for an optional one). What organism.yaml left to a default is
 * shown with that default.
 */
export function sanitizedConfigYaml(config: OrganismConfig, env: NodeJS.ProcessEnv = process.env): string {
  const { name, payloads, ...rest } = sanitizeConfig(config, env) as { name: string; payloads: Array<{ name: string; description?: string; fields: SanitizedField[] }> } & Record<
    string,
    unknown
  >;
  const types = Object.fromEntries(
    payloads.map((p) => [
      p.name,
      {
        ...(p.description !== undefined ? { description: p.description } : {}),
        fields: Object.fromEntries(
          p.fields.map((f) => {
            const type = `${f.type}${f.optional ? '?' : ''}`;
            return [f.name, f.description !== undefined ? { type, description: f.description } : type];
          }),
        ),
      },
    ]),
  );
  // In the order organism.yaml is usually written: the payload types after the listeners.
  const doc: Record<string, unknown> = { organism: { name } };
  for (const [key, value] of Object.entries(snakeKeys(rest) as Record<string, unknown>)) {
    doc[key] = value;
    if (key === 'listeners') doc['payloads'] = types;
  }
  doc['payloads'] ??= types;
  return stringify(literalDollars(doc), { lineWidth: 0 });
}

/** A `${` in a value is written `$${`, so the text read back as organism.yaml has the same values (no substitution). */
function literalDollars(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('${', () => '$${');
  if (Array.isArray(value)) return value.map(literalDollars);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, literalDollars(v)]));
}
