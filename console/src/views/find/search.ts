// The filters of the threads and journal lists, kept in the URL (TanStack Router search params):
// a filtered list is a link that can be shared, reloaded and saved as a view.

/** The threads list's filter. */
export interface ThreadSearch {
  status?: string;
  agent?: string;
  text?: string;
  startTime?: string;
  endTime?: string;
}

/** The journal list's filter. */
export interface JournalSearch {
  state?: string;
  agent?: string;
  threadId?: string;
  text?: string;
  startTime?: string;
  endTime?: string;
}

export type AnySearch = ThreadSearch & JournalSearch;

const THREAD_KEYS = ['status', 'agent', 'text', 'startTime', 'endTime'] as const;
const JOURNAL_KEYS = ['state', 'agent', 'threadId', 'text', 'startTime', 'endTime'] as const;

/** The string values of `keys` in a parsed query (anything else in the URL is dropped). */
function pick<K extends string>(s: Record<string, unknown>, keys: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const k of keys) {
    const v = s[k];
    // The router parses a query value that looks like JSON (a number, true): a filter is text.
    if (typeof v === 'string' && v !== '') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
}

export const threadSearch = (s: Record<string, unknown>): ThreadSearch => pick(s, THREAD_KEYS);
export const journalSearch = (s: Record<string, unknown>): JournalSearch => pick(s, JOURNAL_KEYS);

/** A search with its empty values dropped (what goes into the URL and the saved views). */
export function compact<S extends object>(s: S): S {
  return Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined && v !== '')) as S;
}

/** ISO time (the URL's form) -> the value of a datetime-local input, in the browser's time zone. */
export function toLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** A datetime-local value (local time) -> ISO UTC; empty stays empty. */
export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
