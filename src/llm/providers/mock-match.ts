import type { MockBranch, MockMatch, MockScript, MockStep } from '../../config/types.js';

/** `/pattern/flags` as its parts; null when the text is not written that way (then it is a plain value). */
export function parseSlashRegex(text: string): { source: string; flags: string } | null {
  const match = /^\/(.+)\/([a-z]*)$/s.exec(text);
  return match ? { source: match[1]!, flags: match[2]! } : null;
}

/** True when the script is a list of branches (`{when, steps}`) rather than of steps. */
export function isBranches(script: MockScript): script is readonly MockBranch[] {
  const first = script[0];
  return typeof first === 'object' && first !== null && 'steps' in first;
}

/** The steps that answer `payload`: the first branch whose `when` matches it; null when none does. */
export function stepsFor(script: MockScript, payload: Readonly<Record<string, unknown>>): readonly MockStep[] | null {
  if (!isBranches(script)) return script;
  return script.find((b) => b.when === undefined || Object.entries(b.when).every(([field, match]) => matches(valueAt(payload, field), match)))?.steps ?? null;
}

/** A field's value; `a.b` looks inside `a` when the payload has no field named `a.b`. */
function valueAt(payload: Readonly<Record<string, unknown>>, field: string): unknown {
  if (field in payload) return payload[field];
  let value: unknown = payload;
  for (const part of field.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * A value matches when its text equals the match's (`3` matches 3 and "3": the XML format
 * carries text), or the match is a `/regex/` its text passes, or one item of a list match does.
 * A missing field matches only `null`; a list field matches when one of its items does.
 */
function matches(value: unknown, match: MockMatch): boolean {
  if (Array.isArray(match)) return match.some((m) => matches(value, m as MockMatch));
  if (Array.isArray(value)) return value.some((v) => matches(v, match));
  if (value === undefined || value === null) return match === null;
  if (match === null) return false;
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  const regex = typeof match === 'string' ? parseSlashRegex(match) : null;
  return regex ? new RegExp(regex.source, regex.flags).test(text) : text === String(match);
}
