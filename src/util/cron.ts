import { Cron } from 'croner';

/**
 * Schedule times: 5-field cron expressions evaluated in an IANA time zone (by croner), and fixed
 * intervals (`every: 30s`).
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

/** A checked cron expression: 5 fields (minute hour day-of-month month day-of-week) or a shortcut such as `@daily`. */
export interface CronExpression {
  readonly source: string;
}

/** Thrown for an expression or time zone that cannot be used; the message says what is wrong. */
export class CronError extends Error {}

/**
 * Checks a cron expression. organism.yaml takes the usual 5 fields (croner would also take a
 * seconds and a year field, which a 5-field reader of the file would misread) or a shortcut.
 */
export function parseCron(source: string): CronExpression {
  const text = source.trim();
  if (!text.startsWith('@')) {
    const fields = text === '' ? 0 : text.split(/\s+/).length;
    if (fields !== 5) throw new CronError(`"${source}" has ${fields} field${fields === 1 ? '' : 's'}; a cron expression has 5 (minute hour day-of-month month day-of-week)`);
  }
  try {
    new Cron(text, { paused: true });
  } catch (err) {
    throw new CronError((err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, ''));
  }
  return { source: text };
}

/** Throws a CronError unless `timeZone` is an IANA time zone this Node knows. */
export function checkTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new CronError(`unknown time zone "${timeZone}" (an IANA name such as Europe/Paris or UTC)`);
  }
}

/** Evaluators by zone and expression (a schedule asks for its next time at every tick). */
const jobs = new Map<string, Cron>();
const MAX_JOBS = 1_000;

/**
 * The first instant strictly after `after` (ms) at which `cron` fires in `timeZone`, or null if
 * it never does (`0 0 30 2 *`). A wall time a DST change skips fires at the first minute after
 * the gap (as cron does); one a DST fall-back repeats fires once, at its first occurrence.
 */
export function nextCronTime(cron: CronExpression, timeZone: string, after: number): number | null {
  const key = `${timeZone}\u0000${cron.source}`;
  let job = jobs.get(key);
  if (!job) {
    job = new Cron(cron.source, { timezone: timeZone, paused: true });
    jobs.set(key, job);
    if (jobs.size > MAX_JOBS) jobs.delete(jobs.keys().next().value as string);
  }
  return job.nextRun(new Date(after))?.getTime() ?? null;
}

const UNITS: Readonly<Record<string, number>> = { s: 1000, m: MINUTE, h: 3_600_000, d: DAY };

/** `30s`, `5m`, `1h`, `1d` as milliseconds; null when not of that form or shorter than a second. */
export function parseInterval(text: string): number | null {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNITS[m[2]!]!;
  return ms >= 1000 ? ms : null;
}

/** The first multiple of `intervalMs` (counted from the Unix epoch) strictly after `after`. */
export function nextIntervalTime(intervalMs: number, after: number): number {
  return (Math.floor(after / intervalMs) + 1) * intervalMs;
}
