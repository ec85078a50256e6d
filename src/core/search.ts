/**
 * Text search over journal entries (the console's "find"): what it matches and how far it
 * reads. It reads only the newest `window` journal entries, so a search costs the same on a
 * journal of any size; a list answer says when older entries were left unread.
 */
export interface TextSearch {
  /** Matched case-insensitively (ASCII letters on every store) in an entry's payload (its JSON: field names and values) or error. */
  readonly text: string;
  /** Journal entries read, newest first. */
  readonly window: number;
}

/**
 * `text` as it appears inside a payload's JSON: a quote, a backslash or a control character is
 * escaped there, so `say "hi"` must be looked for as `say \"hi\"`.
 */
export function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** Whether an entry's payload or error contains `text` (the in-memory stores' match, the SQL stores' LIKE). */
export function entryMatches(payload: unknown, error: string | null, text: string): boolean {
  const needle = text.toLowerCase();
  return JSON.stringify(payload).toLowerCase().includes(jsonEscaped(needle)) || (error?.toLowerCase().includes(needle) ?? false);
}
