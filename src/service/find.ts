import { Errors, OrganismError } from '../errors/catalogue.js';
import type { TextSearch } from '../core/search.js';
import { identifierReason } from '../util/storable-text.js';
import { parseTimeRange } from './time.js';

/** Journal entries a text search reads, newest first: a search costs the same on a journal of any size. */
export const TEXT_SEARCH_WINDOW = 100_000;

/** A list filter's time range and text as the stores take them (ms, TextSearch); empty values are no filter. */
export function findFilter(q: { startTime?: string | undefined; endTime?: string | undefined; text?: string | undefined }): {
  startTime?: number;
  endTime?: number;
  text?: TextSearch;
} {
  const range = parseTimeRange(q.startTime, q.endTime);
  return { ...range, ...(q.text ? { text: { text: q.text, window: TEXT_SEARCH_WINDOW } } : {}) };
}

/** The searchTruncated flag of a list answer, when the query searched text. */
export const truncation = (page: { searchTruncated?: boolean }): { searchTruncated?: boolean } => (page.searchTruncated === undefined ? {} : { searchTruncated: page.searchTruncated });

/**
 * Refuses a bulk body naming both or neither of its two selections, and strings of its filter
 * no store can look up (control characters, NUL, lone surrogates), naming the field.
 */
export function bulkSelection<F extends Record<string, unknown>>(ids: readonly string[] | undefined, filter: F | undefined, idsField: string): void {
  if ((ids === undefined) === (filter === undefined)) throw Errors.BULK_SELECTION(idsField, ids ? 'both' : 'neither');
  const problems: Array<{ location: string; field: string; message: string }> = [];
  for (const [i, id] of (ids ?? []).entries()) {
    const reason = identifierReason(id);
    if (reason) problems.push({ location: 'body', field: `${idsField}[${i}]`, message: reason });
  }
  for (const [name, value] of Object.entries(filter ?? {})) {
    const reason = typeof value === 'string' ? identifierReason(value, name === 'text') : null;
    if (reason) problems.push({ location: 'body', field: `filter.${name}`, message: reason });
  }
  if (problems.length > 0) throw Errors.INVALID_REQUEST.withData(problems, problems.map((p) => `${p.field} ${p.message}`).join('; '));
}

export interface BulkOutcome {
  done: number;
  skipped: Array<{ id: string; code: string; detail: string }>;
}

/**
 * Runs `act` on each id, `concurrency` at a time (1: in order). A refusal (an OrganismError: 404,
 * 409, 503 ...) is recorded with its code and detail and the rest go on; an unexpected fault is
 * logged and recorded as an internal error, so the answer always counts what was done.
 */
export async function eachId(ids: readonly string[], concurrency: number, act: (id: string) => Promise<void>, logFault: (err: unknown, id: string) => void): Promise<BulkOutcome> {
  let done = 0;
  // Skips by position: the answer lists them in the order of the ids, however the work interleaved.
  const skipped: Array<BulkOutcome['skipped'][number] | undefined> = [];
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const at = next++;
      const id = ids[at]!;
      try {
        await act(id);
        done++;
      } catch (err) {
        if (err instanceof OrganismError) skipped[at] = { id, code: err.code, detail: err.detail };
        else {
          logFault(err, id);
          const internal = Errors.INTERNAL_ERROR();
          skipped[at] = { id, code: internal.code, detail: internal.detail };
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  return { done, skipped: skipped.filter((x) => x !== undefined) };
}
