import { Errors } from '../errors/catalogue.js';

/** Milliseconds since the epoch -> ISO 8601 UTC (`...Z`). */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : iso(ms);
}

// A date (2025-01-31), or a date and time with optional fraction; a time must carry Z or an offset
// (a local time is ambiguous). Date.parse alone accepts too much (e.g. "1", "March 7").
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/** Parses an ISO 8601 query value to ms; undefined stays undefined; anything else is a 422 naming `param`. */
export function parseTime(param: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = ISO_8601.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw Errors.INVALID_TIME(param, JSON.stringify(value).slice(0, 80));
  return ms;
}

/** Both bounds parsed, and in order. */
export function parseTimeRange(start: string | undefined, end: string | undefined): { startTime?: number; endTime?: number } {
  const startTime = parseTime('startTime', start);
  const endTime = parseTime('endTime', end);
  if (startTime !== undefined && endTime !== undefined && startTime > endTime) {
    throw Errors.INVALID_TIME_RANGE(String(start), String(end));
  }
  return { ...(startTime !== undefined ? { startTime } : {}), ...(endTime !== undefined ? { endTime } : {}) };
}
