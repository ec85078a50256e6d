/**
 * Schedule times: 5-field cron expressions evaluated in an IANA time zone, and fixed intervals
 * (`every: 30s`). Written here rather than taken from a package: the subset organism.yaml needs
 * (lists, ranges, steps, month and day names, `@daily`-style shortcuts, DST gaps skipped and
 * repeated wall times fired once) is small, and the runtime keeps its dependencies few.
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

interface Field {
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const FIELDS: readonly Field[] = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  { min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];
const FIELD_NAMES = ['minute', 'hour', 'day of month', 'month', 'day of week'];

const SHORTCUTS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** A parsed cron expression: the allowed values of each field. */
export interface CronExpression {
  readonly source: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  /** 0 = Sunday (7 is folded into 0). */
  readonly weekdays: ReadonlySet<number>;
  /** Both day fields restricted: a day matches when either does (as cron has it). */
  readonly dayOr: boolean;
}

/** Thrown for an expression or time zone that cannot be used; the message says what is wrong. */
export class CronError extends Error {}

function parseValue(text: string, field: Field, which: string): number {
  const upper = text.toUpperCase();
  const named = field.names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + field.min;
  if (!/^\d+$/.test(text)) throw new CronError(`"${text}" is not a number in the ${which} field`);
  const v = Number(text);
  if (v < field.min || v > field.max) throw new CronError(`${v} is out of range in the ${which} field (${field.min}-${field.max})`);
  return v;
}

function parseField(text: string, field: Field, which: string): { values: Set<number>; star: boolean } {
  const values = new Set<number>();
  let star = false;
  for (const part of text.split(',')) {
    if (part === '') throw new CronError(`empty list item in the ${which} field`);
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined) throw new CronError(`"${part}" has two steps in the ${which} field`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw new CronError(`step "${stepText}" must be a positive integer in the ${which} field`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (range === '*' || range === '?') {
      lo = field.min;
      hi = field.max;
      if (stepText === undefined) star = true;
    } else if (range!.includes('-')) {
      const [a, b] = range!.split('-');
      lo = parseValue(a ?? '', field, which);
      hi = parseValue(b ?? '', field, which);
      if (hi < lo) throw new CronError(`range "${range}" runs backwards in the ${which} field`);
    } else {
      lo = parseValue(range ?? '', field, which);
      hi = stepText === undefined ? lo : field.max;
    }
    for (let v = lo; v <= hi; v += step) values.add(v);
  }
  return { values, star };
}

/** Parses a 5-field cron expression (minute hour day-of-month month day-of-week) or a shortcut such as `@daily`. */
export function parseCron(source: string): CronExpression {
  const text = SHORTCUTS[source.trim().toLowerCase()] ?? source.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5) throw new CronError(`"${source}" has ${parts.length} field${parts.length === 1 ? '' : 's'}; a cron expression has 5 (minute hour day-of-month month day-of-week)`);
  const [m, h, d, mo, w] = parts.map((p, i) => parseField(p, FIELDS[i]!, FIELD_NAMES[i]!));
  const weekdays = new Set([...w!.values].map((v) => v % 7));
  return { source, minutes: m!.values, hours: h!.values, days: d!.values, months: mo!.values, weekdays, dayOr: !d!.star && !w!.star };
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    } catch {
      throw new CronError(`unknown time zone "${timeZone}" (an IANA name such as Europe/Paris or UTC)`);
    }
    formats.set(timeZone, f);
  }
  return f;
}

/** Throws a CronError unless `timeZone` is an IANA time zone this Node knows. */
export function checkTimeZone(timeZone: string): void {
  formatFor(timeZone);
}

/** The wall-clock time of `instant` in `timeZone`, as milliseconds of the same fields in UTC. */
function wallOf(instant: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatFor(timeZone).formatToParts(new Date(instant))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour! % 24, parts.minute!, parts.second!) + (((instant % 1000) + 1000) % 1000);
}

/** The earliest instant whose wall-clock time in `timeZone` is `wall`, or null (a DST gap). */
function instantOf(wall: number, timeZone: string): number | null {
  const candidates = new Set<number>();
  for (const probe of [wall - DAY, wall, wall + DAY]) {
    const offset = wallOf(probe, timeZone) - probe;
    candidates.add(wall - offset);
  }
  const matching = [...candidates].filter((c) => wallOf(c, timeZone) === wall).sort((a, b) => a - b);
  return matching[0] ?? null;
}

function dayMatches(cron: CronExpression, wall: Date): boolean {
  const dom = cron.days.has(wall.getUTCDate());
  const dow = cron.weekdays.has(wall.getUTCDay());
  return cron.dayOr ? dom || dow : dom && dow;
}

/**
 * The first instant strictly after `after` (ms) at which `cron` fires in `timeZone`, or null
 * if none within 5 years (`0 0 30 2 *`). A wall time a DST gap skips does not fire; one a DST
 * fall-back repeats fires once, at its first occurrence.
 */
export function nextCronTime(cron: CronExpression, timeZone: string, after: number): number | null {
  let wall = Math.floor(wallOf(after, timeZone) / MINUTE) * MINUTE + MINUTE;
  const limit = wall + 5 * 366 * DAY;
  while (wall < limit) {
    const d = new Date(wall);
    if (!cron.months.has(d.getUTCMonth() + 1)) {
      wall = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      continue;
    }
    if (!dayMatches(cron, d)) {
      wall = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
      continue;
    }
    if (!cron.hours.has(d.getUTCHours())) {
      wall = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
      continue;
    }
    if (!cron.minutes.has(d.getUTCMinutes())) {
      wall += MINUTE;
      continue;
    }
    const instant = instantOf(wall, timeZone);
    if (instant !== null && instant > after) return instant;
    wall += MINUTE;
  }
  return null;
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
