/**
 * Schedules (issue 31): a payload injected to a listener at times given by a cron expression or
 * an interval, each tick as a new thread, claimed in the store so that it fires once however
 * many processes share the store.
 */

/** A schedule as configured (organism.yaml `schedules:`) or added at run time (POST /schedules). */
export interface ScheduleSpec {
  readonly name: string;
  /** 5-field cron expression (with `timezone`), or null for an interval. */
  readonly cron: string | null;
  /** IANA time zone of `cron` (default UTC); null for an interval. */
  readonly timezone: string | null;
  /** The interval as written (`30s`, `5m`, `1h`), or null for a cron schedule. */
  readonly every: string | null;
  /** The listener each tick injects to. */
  readonly to: string;
  /** The payload injected (inject form: fields, with `type` when the listener accepts several types). */
  readonly payload: Readonly<Record<string, unknown>>;
  /** A tick missed while no process ran fires once when one starts again (true), or is skipped. */
  readonly catchUp: boolean;
}

/** fired: injected (its thread); skipped: missed with `catch_up: false`; failed: the inject was refused (its error). */
export type TickOutcome = 'fired' | 'skipped' | 'failed';

/** One tick of a schedule, as stored. */
export interface ScheduleTick {
  readonly schedule: string;
  /** The time the tick was due (ms). */
  readonly tickAt: number;
  /** When a process claimed it (ms). */
  readonly claimedAt: number;
  /** Null while being injected (or if the process stopped in between). */
  readonly outcome: TickOutcome | null;
  readonly threadId: string | null;
  readonly error: string | null;
  /** Fired after downtime (a catch-up), not on time. */
  readonly late: boolean;
}

/** A runtime schedule as stored, with when it was added. */
export interface StoredSchedule {
  readonly spec: ScheduleSpec;
  readonly createdAt: number;
}

/**
 * Where schedules added at run time and every schedule's ticks are kept. A tick is claimed by
 * inserting its (schedule, tick time) row: the first process to insert it fires it.
 */
export interface ScheduleStore {
  /** The schedules added at run time, oldest first. */
  list(): Promise<StoredSchedule[]>;
  /** False (nothing written) when one of that name is stored. */
  add(spec: ScheduleSpec, now: number): Promise<boolean>;
  /** Removes it with its ticks and cursor; false when none of that name is stored. */
  remove(name: string): Promise<boolean>;
  /**
   * The time after which the schedule's ticks are due: its latest claimed tick, else when a
   * process first saw it (recorded now when nobody had).
   */
  cursor(name: string, now: number): Promise<number>;
  /** Inserts the tick's row; true when this call inserted it (the caller fires it), false when it was there. */
  claim(tick: { schedule: string; tickAt: number; claimedAt: number; late: boolean; outcome: TickOutcome | null }): Promise<boolean>;
  /** Records what a claimed tick became. */
  settle(schedule: string, tickAt: number, outcome: TickOutcome, threadId: string | null, error: string | null): Promise<void>;
  /** The latest ticks of a schedule, newest first. */
  ticks(name: string, limit: number): Promise<ScheduleTick[]>;
  /** Ticks claimed before `before` that never settled (the process that claimed them stopped while injecting). */
  unsettled(before: number): Promise<ScheduleTick[]>;
  /** Takes over an unsettled tick: true when its claim time was still `claimedAt` (then it is `now`); another process got it otherwise. */
  reclaim(schedule: string, tickAt: number, claimedAt: number, now: number): Promise<boolean>;
  /** Keeps the newest `keep` ticks of each schedule. */
  prune(keep: number): Promise<void>;
}
