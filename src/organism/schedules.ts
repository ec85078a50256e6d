import { Trouble } from './trouble.js';
import { createHash } from 'node:crypto';
import type { ScheduleSpec, ScheduleStore, ScheduleTick } from '../core/schedule.js';
import { nextCronTime, nextIntervalTime, parseCron, parseInterval, type CronExpression } from '../util/cron.js';
import type { Logger } from '../util/logger.js';

/** A tick handled this late or later was missed (the process was down or stalled): `catch_up` decides. */
const MAX_GRACE_MS = 2_000;
/** The scheduler looks for new runtime schedules (added by another process) at least this often. */
const POLL_MS = 1_000;
/** Ticks kept per schedule. */
const KEEP_TICKS = 100;
/** A tick claimed this long ago and never settled was claimed by a process that stopped while injecting it. */
const UNSETTLED_MS = 60_000;
/** Passes between two looks for such ticks (and at start). */
const UNSETTLED_EVERY = 30;
/** Ticks looked through at most when a cron schedule was idle a long time (its latest missed one is found within them). */
const MAX_SCAN = 200_000;

/**
 * The thread a tick injects: derived from the schedule and the tick, so that a process taking
 * over a tick whose injecting process stopped can tell whether the inject happened.
 */
export function tickThreadId(schedule: string, tickAt: number): string {
  return `sched-${createHash('sha256').update(`${schedule}\0${tickAt}`).digest('hex').slice(0, 24)}`;
}

/** A schedule as the API and the console show it. */
export interface ScheduleView {
  readonly spec: ScheduleSpec;
  /** `config`: organism.yaml (changed there); `api`: added at run time (DELETE removes it). */
  readonly source: 'config' | 'api';
  readonly nextRunAt: number | null;
  /** Newest first. */
  readonly ticks: readonly ScheduleTick[];
}

export interface SchedulerDeps {
  readonly store: ScheduleStore;
  /** Injects a tick's payload as a new thread, of this id (the tick's own: see tickThreadId). */
  readonly inject: (spec: ScheduleSpec, tickAt: number, threadId: string) => Promise<{ threadId: string }>;
  /** Whether a thread of this id has a journaled message (the inject of a tick happened). */
  readonly injected: (threadId: string) => Promise<boolean>;
  /** The schedules of organism.yaml (read at each pass: a reload changes them). */
  readonly configured: () => readonly ScheduleSpec[];
  /** After a tick fired (webhooks hear of it). */
  readonly onFired?: (spec: ScheduleSpec, tick: { tickAt: number; threadId: string; late: boolean }) => void;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** The times a schedule fires: the first strictly after a given time. */
class Timing {
  private readonly cron: CronExpression | null;
  private readonly interval: number | null;

  constructor(readonly spec: ScheduleSpec) {
    this.cron = spec.cron !== null ? parseCron(spec.cron) : null;
    this.interval = spec.every !== null ? parseInterval(spec.every) : null;
  }

  next(after: number): number | null {
    if (this.interval !== null) return nextIntervalTime(this.interval, after);
    if (this.cron !== null) return nextCronTime(this.cron, this.spec.timezone ?? 'UTC', after);
    return null;
  }

  /** How late a tick may be handled and still count as on time. */
  get graceMs(): number {
    return Math.min(this.interval ?? 60_000, MAX_GRACE_MS);
  }

  /**
   * The ticks due in (cursor, now]: those on time (each fires), and the latest one missed before
   * them (at most one catch-up however many were missed).
   */
  due(cursor: number, now: number): { onTime: number[]; missed: number | null } {
    const onTime: number[] = [];
    let missed: number | null = null;
    const edge = now - this.graceMs;
    if (this.interval !== null) {
      const first = nextIntervalTime(this.interval, cursor);
      if (first > now) return { onTime, missed };
      const latest = Math.floor(now / this.interval) * this.interval;
      const firstOnTime = Math.max(first, Math.ceil(edge / this.interval) * this.interval);
      for (let t = firstOnTime; t <= latest; t += this.interval) onTime.push(t);
      if (first < firstOnTime) missed = firstOnTime - this.interval;
      return { onTime, missed };
    }
    let t = this.next(cursor);
    for (let i = 0; t !== null && t <= now && i < MAX_SCAN; i++) {
      if (t >= edge) onTime.push(t);
      else missed = t;
      t = this.next(t);
    }
    return { onTime, missed };
  }
}

/**
 * Fires schedules: each tick injects the schedule's payload as a new thread, once however many
 * processes share the store. A pass looks at each schedule whose next tick is due, reads its
 * cursor (the latest claimed tick) from the store, and claims each due tick by inserting its
 * (schedule, tick time) row; only the process whose insert succeeded injects. A tick missed while
 * no process ran (or this one stalled past the grace) fires once when a process looks again, the
 * latest of the missed ones, or is recorded skipped with `catch_up: false`.
 */
export class Scheduler {
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  /** Failed rounds, told once until one succeeds. */
  private readonly trouble: Trouble;
  /** The runtime schedules, as of the last pass. */
  private added: ScheduleSpec[] = [];
  /** Per schedule: its timing and the latest cursor this process knows (never ahead of the store's). */
  private readonly known = new Map<string, { timing: Timing; key: string; cursor: number | null }>();
  private passes = 0;

  constructor(private readonly deps: SchedulerDeps) {
    this.now = deps.now ?? Date.now;
    this.trouble = new Trouble(deps.logger, 'schedule pass failed; retrying', 'schedule passes work again');
  }

  start(): void {
    this.stopped = false;
    this.wake(0);
  }

  /** Stops looking; resolves once a pass under way has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** The configured schedules and the runtime ones, with their next run and latest ticks. */
  async list(tickLimit = 10): Promise<ScheduleView[]> {
    this.added = (await this.deps.store.list()).map((s) => s.spec);
    const now = this.now();
    return Promise.all(
      this.all().map(async ({ spec, source }) => ({
        spec,
        source,
        nextRunAt: this.timing(spec).next(now),
        ticks: await this.deps.store.ticks(spec.name, tickLimit),
      })),
    );
  }

  async get(name: string, tickLimit = 50): Promise<ScheduleView | null> {
    return (await this.list(tickLimit)).find((v) => v.spec.name === name) ?? null;
  }

  isConfigured(name: string): boolean {
    return this.deps.configured().some((s) => s.name === name);
  }

  /** Adds a runtime schedule (checked by the caller); false when the store has one of that name. */
  async add(spec: ScheduleSpec): Promise<boolean> {
    const added = await this.deps.store.add(spec, this.now());
    if (added) this.wake(0);
    return added;
  }

  async remove(name: string): Promise<boolean> {
    const removed = await this.deps.store.remove(name);
    this.known.delete(name);
    return removed;
  }

  private all(): Array<{ spec: ScheduleSpec; source: 'config' | 'api' }> {
    const configured = this.deps.configured();
    const names = new Set(configured.map((s) => s.name));
    return [...configured.map((spec) => ({ spec, source: 'config' as const })), ...this.added.filter((s) => !names.has(s.name)).map((spec) => ({ spec, source: 'api' as const }))];
  }

  private timing(spec: ScheduleSpec): Timing {
    const key = JSON.stringify([spec.cron, spec.timezone, spec.every]);
    let k = this.known.get(spec.name);
    if (!k || k.key !== key) this.known.set(spec.name, (k = { timing: new Timing(spec), key, cursor: null }));
    return k.timing;
  }

  private wake(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.running) return void this.running.then(() => this.wake(0));
      this.running = this.pass()
        .then(
          (next) => {
            this.trouble.ok();
            return next;
          },
          (err: unknown) => {
            this.trouble.fail(err);
            return undefined;
          },
        )
        .then((next) => {
          this.running = null;
          this.wake(typeof next === 'number' ? next : POLL_MS);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  /** One look at every schedule; returns how long to sleep until the next tick or poll. */
  private async pass(): Promise<number> {
    this.added = (await this.deps.store.list()).map((s) => s.spec);
    let wakeAt = this.now() + POLL_MS;
    const names = new Set<string>();
    for (const { spec } of this.all()) {
      if (this.stopped) break;
      names.add(spec.name);
      try {
        await this.look(spec);
      } catch (err) {
        this.deps.logger.error({ err, schedule: spec.name }, 'schedule check failed; retrying');
      }
      const next = this.timing(spec).next(this.now());
      if (next !== null) wakeAt = Math.min(wakeAt, next);
    }
    for (const name of [...this.known.keys()]) if (!names.has(name)) this.known.delete(name);
    if (this.passes % UNSETTLED_EVERY === 0 && !this.stopped) await this.settleOrphans(names);
    if (++this.passes % 600 === 0) await this.deps.store.prune(KEEP_TICKS).catch((err: unknown) => this.deps.logger.warn({ err }, 'pruning schedule ticks failed'));
    return Math.max(5, wakeAt - this.now());
  }

  private async look(spec: ScheduleSpec): Promise<void> {
    const timing = this.timing(spec);
    const known = this.known.get(spec.name)!;
    const now = this.now();
    if (known.cursor !== null) {
      const next = timing.next(known.cursor);
      if (next === null || next > now) return;
    }
    const cursor = await this.deps.store.cursor(spec.name, now);
    known.cursor = cursor;
    const { onTime, missed } = timing.due(cursor, now);
    if (missed !== null) {
      if (spec.catchUp) await this.fire(spec, missed, true);
      else if (await this.deps.store.claim({ schedule: spec.name, tickAt: missed, claimedAt: now, late: true, outcome: 'skipped' })) {
        this.deps.logger.info({ schedule: spec.name, tick: new Date(missed).toISOString() }, 'missed schedule tick skipped (catch_up: false)');
      }
      known.cursor = missed;
    }
    for (const tickAt of onTime) {
      await this.fire(spec, tickAt, false);
      known.cursor = tickAt;
    }
  }

  /**
   * Ticks whose process stopped between claiming and settling them: each is taken over (one
   * process wins the compare-and-set on its claim time) and injected unless its thread shows the
   * inject happened, so that a tick fires exactly once across a crash.
   */
  private async settleOrphans(names: ReadonlySet<string>): Promise<void> {
    const specs = new Map(this.all().map(({ spec }) => [spec.name, spec]));
    for (const tick of await this.deps.store.unsettled(this.now() - UNSETTLED_MS)) {
      const spec = specs.get(tick.schedule);
      if (!spec || !names.has(tick.schedule) || this.stopped) continue;
      if (!(await this.deps.store.reclaim(tick.schedule, tick.tickAt, tick.claimedAt, this.now()))) continue;
      const threadId = tickThreadId(spec.name, tick.tickAt);
      if (await this.deps.injected(threadId)) {
        await this.deps.store.settle(spec.name, tick.tickAt, 'fired', threadId, null);
        continue;
      }
      this.deps.logger.warn({ schedule: spec.name, tick: new Date(tick.tickAt).toISOString() }, 'schedule tick claimed by a process that stopped before injecting it: injecting it now');
      await this.inject(spec, tick.tickAt, true);
    }
  }

  private async fire(spec: ScheduleSpec, tickAt: number, late: boolean): Promise<void> {
    const claimed = await this.deps.store.claim({ schedule: spec.name, tickAt, claimedAt: this.now(), late, outcome: null });
    if (!claimed) return;
    await this.inject(spec, tickAt, late);
  }

  /** Injects a claimed tick and records what it became. */
  private async inject(spec: ScheduleSpec, tickAt: number, late: boolean): Promise<void> {
    let threadId: string;
    try {
      threadId = (await this.deps.inject(spec, tickAt, tickThreadId(spec.name, tickAt))).threadId;
    } catch (err) {
      this.deps.logger.warn({ err, schedule: spec.name, tick: new Date(tickAt).toISOString() }, 'schedule tick could not inject');
      await this.deps.store.settle(spec.name, tickAt, 'failed', null, err instanceof Error ? err.message : String(err));
      return;
    }
    await this.deps.store.settle(spec.name, tickAt, 'fired', threadId, null);
    // An on-time tick at debug (a 1 s schedule would write a line a second; GET /schedules lists the ticks); a catch-up at info.
    const fields = { schedule: spec.name, tick: new Date(tickAt).toISOString(), threadId, late };
    if (late) this.deps.logger.info(fields, 'missed schedule tick fired (catch-up)');
    else this.deps.logger.debug(fields, 'schedule tick fired');
    this.deps.onFired?.(spec, { tickAt, threadId, late });
  }
}
