import type { ScheduleSpec, ScheduleStore, ScheduleTick, StoredSchedule, TickOutcome } from '../../core/schedule.js';

/** Schedules and ticks of an organism without a data directory (they last as long as the process). */
export class MemoryScheduleStore implements ScheduleStore {
  private readonly added = new Map<string, StoredSchedule>();
  private readonly since = new Map<string, number>();
  private readonly tickRows = new Map<string, Map<number, ScheduleTick>>();

  async list(): Promise<StoredSchedule[]> {
    return [...this.added.values()].sort((a, b) => a.createdAt - b.createdAt || (a.spec.name < b.spec.name ? -1 : 1));
  }

  async add(spec: ScheduleSpec, now: number): Promise<boolean> {
    if (this.added.has(spec.name)) return false;
    this.added.set(spec.name, { spec, createdAt: now });
    return true;
  }

  async remove(name: string): Promise<boolean> {
    this.since.delete(name);
    this.tickRows.delete(name);
    return this.added.delete(name);
  }

  async cursor(name: string, now: number): Promise<number> {
    if (!this.since.has(name)) this.since.set(name, now);
    const rows = this.tickRows.get(name);
    const latest = rows && rows.size > 0 ? Math.max(...rows.keys()) : null;
    return latest ?? this.since.get(name)!;
  }

  async claim(tick: { schedule: string; tickAt: number; claimedAt: number; late: boolean; outcome: TickOutcome | null }): Promise<boolean> {
    let rows = this.tickRows.get(tick.schedule);
    if (!rows) this.tickRows.set(tick.schedule, (rows = new Map()));
    if (rows.has(tick.tickAt)) return false;
    rows.set(tick.tickAt, { ...tick, threadId: null, error: null });
    return true;
  }

  async settle(schedule: string, tickAt: number, outcome: TickOutcome, threadId: string | null, error: string | null): Promise<void> {
    const row = this.tickRows.get(schedule)?.get(tickAt);
    if (row) this.tickRows.get(schedule)!.set(tickAt, { ...row, outcome, threadId, error });
  }

  async ticks(name: string, limit: number): Promise<ScheduleTick[]> {
    return [...(this.tickRows.get(name)?.values() ?? [])].sort((a, b) => b.tickAt - a.tickAt).slice(0, limit);
  }

  async unsettled(before: number): Promise<ScheduleTick[]> {
    return [...this.tickRows.values()].flatMap((rows) => [...rows.values()]).filter((t) => t.outcome === null && t.claimedAt < before);
  }

  async reclaim(schedule: string, tickAt: number, claimedAt: number, now: number): Promise<boolean> {
    const row = this.tickRows.get(schedule)?.get(tickAt);
    if (!row || row.outcome !== null || row.claimedAt !== claimedAt) return false;
    this.tickRows.get(schedule)!.set(tickAt, { ...row, claimedAt: now });
    return true;
  }

  async prune(keep: number): Promise<void> {
    for (const rows of this.tickRows.values()) {
      const old = [...rows.keys()].sort((a, b) => b - a).slice(keep);
      for (const t of old) rows.delete(t);
    }
  }
}
