import { Errors } from '../errors/catalogue.js';
import { byShareUsed, MemoryBudgetArchive } from './budget-archive.js';
import type {
  BudgetListQuery,
  BudgetPage,
  BudgetSeverity,
  BudgetThresholdEvent,
  BudgetView,
  Reservation,
  ThreadBudgetInfo,
  ThreadBudgetSnapshot,
  BudgetArchive,
  BudgetLedger,
} from '../core/budget.js';

export type { BudgetListQuery, BudgetPage, BudgetSeverity, BudgetState, BudgetThresholdEvent, BudgetView, Reservation, ThreadBudgetInfo, ThreadBudgetSnapshot } from '../core/budget.js';

const THRESHOLDS: ReadonlyArray<{ threshold: 75 | 90 | 95; severity: BudgetSeverity }> = [
  { threshold: 75, severity: 'warning' },
  { threshold: 90, severity: 'critical' },
  { threshold: 95, severity: 'final' },
];

interface Budget {
  maxTokens: number;
  promptTokens: number;
  completionTokens: number;
  reserved: number;
  /** Thresholds already delivered (each fires once per thread). */
  fired: Set<number>;
  open: Map<number, number>;
  /** The thread has finished: kept here only until its calls in flight end (and it is archived). */
  finished: boolean;
}

/**
 * Per-thread token budgets. A budget is created by a thread's first LLM call (reserve), or by
 * the operator's ceiling, and never by a lookup (has/get/list/count/headroom).
 *
 * A budget is the thread's whole life's: when the thread finishes (completed, error, killed)
 * it stops being live (list and count show live budgets) and goes to the archive with its
 * spend, its ceiling and its thresholds; the thread's next LLM call, after another inject or
 * a redelivery, takes it back and goes on from there. Memory holds live budgets only.
 *
 * Reservation rule (kept deliberately simple): a reservation is refused, with
 * BUDGET_EXHAUSTED, exactly when `used + reservedInFlight + tokens > maxTokens`, i.e. only
 * when this call's worst case could take the thread past its ceiling. Nothing is clamped: a
 * clamped reservation would let a call whose output is not limited to the clamp overrun the
 * ceiling, and the issue asks for a ceiling that holds. The original system's defect (an
 * estimate blocking threads that were not exhausted) is avoided by counting only what is
 * real: settled usage plus the reservations of calls still in flight, each released exactly
 * once (settle or cancel), none surviving a restart. A caller that would rather shrink its
 * call than be refused asks `headroom()` first and lowers its maximum output to fit.
 *
 * After a call its real usage settles; thresholds (75/90/95 %) crossed by it fire once each
 * per thread, all of them in order when one call jumps over several. A reservation settles
 * at most once, so a repeated settle cannot bill a call twice; a call that ends after its
 * thread finished (a kill) still bills it.
 *
 * Ceiling changes: raising the ceiling re-arms every threshold the thread is now below, so
 * the warnings fire again when crossed again; lowering it leaves thresholds the thread is now
 * above to fire at its next settle (there is no agent to address them to before that).
 */
export class BudgetManager {
  /** The ceiling of budgets created from now on (a reload changes it through changeDefault). */
  defaultMaxTokens: number;
  private readonly budgets = new Map<string, Budget>();
  private readonly listeners = new Set<(e: BudgetThresholdEvent) => void>();
  private readonly archive: BudgetArchive;
  /** Finished budgets the archive has not taken yet (a storage fault): tried again at each snapshot. */
  private readonly unarchived = new Set<string>();
  private nextId = 1;

  private readonly onListenerError: (err: unknown) => void;
  private readonly onArchiveError: (err: unknown) => void;

  /**
   * `onListenerError` hears what a throwing threshold listener threw (e.g. to log it);
   * `archive` keeps finished threads' budgets (default: in memory, as long as the process),
   * and `onArchiveError` hears when it refused one (it is tried again at the next snapshot).
   */
  constructor(opts: { defaultMaxTokens: number; onListenerError?: (err: unknown) => void; archive?: BudgetArchive; onArchiveError?: (err: unknown) => void }) {
    this.defaultMaxTokens = opts.defaultMaxTokens;
    this.onListenerError = opts.onListenerError ?? (() => {});
    this.archive = opts.archive ?? new MemoryBudgetArchive();
    this.onArchiveError = opts.onArchiveError ?? this.onListenerError;
  }

  has(threadId: string): boolean {
    return this.budgets.has(threadId) || this.archive.get(threadId) !== null;
  }

  /** The thread's budget, live or finished (then its figures as kept). */
  get(threadId: string): BudgetView | null {
    const b = this.budgets.get(threadId);
    if (b) return { ...info(threadId, b), active: !b.finished };
    const kept = this.archive.get(threadId);
    return kept ? { ...info(threadId, fromSnapshot(kept)), active: false } : null;
  }

  list(query: BudgetListQuery = { state: 'live', limit: Number.MAX_SAFE_INTEGER, offset: 0 }): BudgetPage {
    const { state, limit, offset } = query;
    const live = state === 'finished' ? [] : this.liveViews();
    if (state === 'live') return { items: live.slice(offset, offset + limit), total: live.length };
    const page = this.archive.finished(state === 'finished' ? { limit, offset } : { limit: offset + limit, offset: 0 });
    const finished = page.items.map((s) => ({ ...info(s.threadId, fromSnapshot(s)), active: false }));
    if (state === 'finished') return { items: finished, total: page.total };
    const merged = [...live, ...finished].sort(byShareUsed);
    return { items: merged.slice(offset, offset + limit), total: live.length + page.total };
  }

  /** Live budgets. */
  count(): number {
    let n = 0;
    for (const b of this.budgets.values()) if (!b.finished) n++;
    return n;
  }

  /** Tokens a reservation may take now without being refused (never creates a budget). */
  headroom(threadId: string): number {
    const b = this.budgets.get(threadId) ?? fromKept(this.archive.get(threadId));
    if (!b) return Math.max(0, this.defaultMaxTokens);
    return Math.max(0, b.maxTokens - b.promptTokens - b.completionTokens - b.reserved);
  }

  reserve(threadId: string, tokens: number): Reservation {
    // A negative or NaN reservation would enlarge the budget: a caller bug, not an operator error.
    if (!Number.isFinite(tokens) || tokens < 0) throw new RangeError(`reservation must be a non-negative number of tokens, not ${tokens}`);
    const b = this.liveBudget(threadId);
    const used = b.promptTokens + b.completionTokens;
    if (used + b.reserved + tokens > b.maxTokens) {
      throw Errors.BUDGET_EXHAUSTED(threadId, used, b.maxTokens, tokens);
    }
    const r: Reservation = { id: this.nextId++, threadId, tokens };
    b.reserved += tokens;
    b.open.set(r.id, tokens);
    return r;
  }

  settle(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): BudgetThresholdEvent[] {
    const b = this.budgets.get(r.threadId);
    // This reservation settled or was cancelled already (or died with a previous process).
    if (!b || !this.unreserve(b, r)) return [];
    b.promptTokens += usage.promptTokens;
    b.completionTokens += usage.completionTokens;
    const fired = thresholdsReached(info(r.threadId, b), b.fired, agent);
    for (const e of fired) b.fired.add(e.threshold);
    this.closeIfFinished(r.threadId, b);
    for (const e of fired) {
      for (const fn of this.listeners) {
        try {
          fn(e);
        } catch (err) {
          // A listener must never break accounting nor keep the others from hearing.
          try {
            this.onListenerError(err);
          } catch {
            // nothing more to do
          }
        }
      }
    }
    return fired;
  }

  cancel(r: Reservation): void {
    const b = this.budgets.get(r.threadId);
    if (b && this.unreserve(b, r)) this.closeIfFinished(r.threadId, b);
  }

  /**
   * Sets a thread's ceiling. With `create`, a thread without a budget gets one (the operator
   * sets a ceiling before the thread's first LLM call, or before it starts at all). A finished
   * thread's budget takes the ceiling and stays finished (its next inject goes on under it). A
   * ceiling below what the thread has already used is refused: it would state a limit already broken.
   */
  setCeiling(threadId: string, maxTokens: number, options: { create?: boolean } = {}): BudgetView {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`a ceiling must be a positive integer, not ${maxTokens}`);
    const kept = this.budgets.has(threadId) ? null : this.archive.get(threadId);
    const b = this.budgets.get(threadId) ?? fromKept(kept);
    if (!b) {
      if (!options.create) throw Errors.BUDGET_NOT_FOUND(threadId);
      const created = newBudget(maxTokens);
      this.budgets.set(threadId, created);
      return { ...info(threadId, created), active: true };
    }
    const used = b.promptTokens + b.completionTokens;
    if (maxTokens < used) throw Errors.BUDGET_BELOW_USAGE(threadId, used, maxTokens, used);
    b.maxTokens = maxTokens;
    for (const t of thresholdsAbove(used, maxTokens)) b.fired.delete(t);
    if (kept) this.archive.put(snapshotOf(threadId, b), false);
    else if (b.finished) this.keep(threadId, b);
    return { ...info(threadId, b), active: !kept && !b.finished };
  }

  /**
   * A new default ceiling (a reload of `max_tokens_per_thread`): budgets created from now on
   * get it, and so does every live budget at the previous default, its spend untouched (one
   * set to another value by the operator keeps it). A ceiling now below a thread's spend is
   * taken all the same: the thread's next call is refused, as it would be at the new limit.
   * Thresholds follow the setCeiling rule. Returns how many live budgets took it.
   */
  changeDefault(maxTokens: number): number {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`a ceiling must be a positive integer, not ${maxTokens}`);
    const previous = this.defaultMaxTokens;
    this.defaultMaxTokens = maxTokens;
    if (previous === maxTokens) return 0;
    let moved = 0;
    for (const b of this.budgets.values()) {
      if (b.finished || b.maxTokens !== previous) continue;
      b.maxTokens = maxTokens;
      for (const t of thresholdsAbove(b.promptTokens + b.completionTokens, maxTokens)) b.fired.delete(t);
      moved++;
    }
    return moved;
  }

  /**
   * The thread has finished: its budget is no longer live and goes to the archive, spend and
   * all (memory keeps it until the thread's calls in flight have ended).
   */
  finish(threadId: string): void {
    const b = this.budgets.get(threadId);
    if (!b || b.finished) return;
    b.finished = true;
    // Calls still in flight (a kill): archived now too, so the finished list shows it meanwhile.
    if (b.open.size > 0) this.keep(threadId, b);
    this.closeIfFinished(threadId, b);
  }

  onThreshold(fn: (e: BudgetThresholdEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The live budgets, to be saved (finished ones are in the archive; those it refused are tried again here). */
  snapshot(): ThreadBudgetSnapshot[] {
    for (const id of this.unarchived) {
      const b = this.budgets.get(id);
      if (!b?.finished) this.unarchived.delete(id);
      else if (b.open.size > 0) this.keep(id, b);
      else this.closeIfFinished(id, b);
    }
    return [...this.budgets].filter(([, b]) => !b.finished).map(([threadId, b]) => snapshotOf(threadId, b));
  }

  /**
   * Restores persisted budgets as live (reservations of calls that died with the process are
   * gone). Rows come from disk: malformed ones are skipped rather than poisoning the accounting.
   */
  restore(snapshots: readonly ThreadBudgetSnapshot[]): void {
    for (const s of snapshots) {
      if (!isSnapshot(s)) continue;
      this.budgets.set(s.threadId, fromSnapshot(s));
      this.archive.revive(s.threadId);
    }
  }

  /** Keeps a finished thread's figures (at boot: a thread that ended after the last save). */
  keepFinished(s: ThreadBudgetSnapshot): void {
    if (isSnapshot(s) && !this.budgets.has(s.threadId)) this.archive.put(s, false);
  }

  /** The budget a reservation spends: live, taken back from the archive, or new at the default ceiling. */
  private liveBudget(threadId: string): Budget {
    let b = this.budgets.get(threadId);
    if (!b) {
      const kept = fromKept(this.archive.get(threadId));
      if (kept) this.archive.revive(threadId);
      b = kept ?? newBudget(this.defaultMaxTokens);
      this.budgets.set(threadId, b);
    } else if (b.finished) {
      b.finished = false;
      this.unarchived.delete(threadId);
      this.archive.revive(threadId);
    }
    return b;
  }

  /** Archives a finished budget's figures; false when the archive refused (kept in memory, tried again). */
  private keep(threadId: string, b: Budget): boolean {
    try {
      this.archive.put(snapshotOf(threadId, b), false);
      this.unarchived.delete(threadId);
      return true;
    } catch (err) {
      this.unarchived.add(threadId);
      try {
        this.onArchiveError(err);
      } catch {
        // nothing more to do
      }
      return false;
    }
  }

  /** A finished budget leaves memory once archived with nothing in flight (a late settle is archived with it). */
  private closeIfFinished(threadId: string, b: Budget): void {
    if (b.finished && b.open.size === 0 && this.keep(threadId, b)) this.budgets.delete(threadId);
  }

  /** False when the reservation is not open on this budget (settled, cancelled, or from before a restart). */
  private unreserve(b: Budget, r: Reservation): boolean {
    const held = b.open.get(r.id);
    if (held === undefined) return false;
    b.open.delete(r.id);
    b.reserved -= held;
    return true;
  }

  private liveViews(): BudgetView[] {
    const views: BudgetView[] = [];
    for (const [id, b] of this.budgets) if (!b.finished) views.push({ ...info(id, b), active: true });
    return views.sort(byShareUsed);
  }
}

function newBudget(maxTokens: number): Budget {
  return { maxTokens, promptTokens: 0, completionTokens: 0, reserved: 0, fired: new Set(), open: new Map(), finished: false };
}

function fromSnapshot(s: ThreadBudgetSnapshot): Budget {
  return { ...newBudget(s.maxTokens), promptTokens: s.promptTokens, completionTokens: s.completionTokens, fired: new Set(knownThresholds(s.fired)) };
}

function fromKept(s: ThreadBudgetSnapshot | null): Budget | undefined {
  return s && isSnapshot(s) ? fromSnapshot(s) : undefined;
}

function snapshotOf(threadId: string, b: Budget): ThreadBudgetSnapshot {
  return { threadId, maxTokens: b.maxTokens, promptTokens: b.promptTokens, completionTokens: b.completionTokens, fired: [...b.fired] };
}

/**
 * The thresholds `now` has reached that have not fired yet, in order, as events (the caller
 * records them fired). Shared by every ledger so the rule and the texts are the same.
 */
export function thresholdsReached(now: ThreadBudgetInfo, fired: ReadonlySet<number>, agent: string): BudgetThresholdEvent[] {
  const events: BudgetThresholdEvent[] = [];
  for (const t of THRESHOLDS) {
    if (now.maxTokens <= 0 || fired.has(t.threshold)) continue;
    if ((now.totalTokens / now.maxTokens) * 100 < t.threshold) continue;
    events.push({
      threadId: now.threadId,
      agent,
      severity: t.severity,
      threshold: t.threshold,
      percentUsed: now.percentUsed,
      tokensUsed: now.totalTokens,
      tokensRemaining: Math.max(0, now.remaining),
      maxTokens: now.maxTokens,
      message: `Thread has used ${now.percentUsed}% of its ${now.maxTokens}-token budget (${t.severity}); ${Math.max(0, now.remaining)} tokens remain`,
    });
  }
  return events;
}

/** The thresholds a thread that used `used` of `maxTokens` is below (re-armed by a ceiling change). */
export function thresholdsAbove(used: number, maxTokens: number): number[] {
  const percent = (used / maxTokens) * 100;
  return THRESHOLDS.filter((t) => percent < t.threshold).map((t) => t.threshold);
}

/** Only the thresholds there are (75, 90, 95), from a row or a snapshot read back. */
export function knownThresholds(fired: readonly number[]): number[] {
  return fired.filter((t) => THRESHOLDS.some((x) => x.threshold === t));
}

/** A budget's figures, reservations included (a shared ledger's row). */
export function reservedBudgetInfo(threadId: string, maxTokens: number, promptTokens: number, completionTokens: number, reserved: number): ThreadBudgetInfo {
  return info(threadId, { maxTokens, promptTokens, completionTokens, reserved });
}

function info(threadId: string, b: Omit<Budget, 'fired' | 'open' | 'finished'>): ThreadBudgetInfo {
  const totalTokens = b.promptTokens + b.completionTokens;
  // Never negative: a restored spend can exceed the ceiling (see Organism.restoreBudgets).
  const remaining = Math.max(0, b.maxTokens - totalTokens);
  return {
    threadId,
    maxTokens: b.maxTokens,
    promptTokens: b.promptTokens,
    completionTokens: b.completionTokens,
    totalTokens,
    reservedTokens: b.reserved,
    remaining,
    percentUsed: b.maxTokens <= 0 ? 0 : Math.round((totalTokens / b.maxTokens) * 1000) / 10,
    isExhausted: remaining <= 0,
  };
}

function isSnapshot(s: unknown): s is ThreadBudgetSnapshot {
  if (typeof s !== 'object' || s === null) return false;
  const o = s as Record<string, unknown>;
  const count = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  return typeof o['threadId'] === 'string' && count(o['maxTokens']) && count(o['promptTokens']) && count(o['completionTokens']) && Array.isArray(o['fired']);
}

/**
 * The embedded BudgetLedger: `manager`'s answers, as promises resolved at once (the manager
 * itself stays synchronous: one process owns its budgets). Nothing to close.
 */
export function localBudgetLedger(manager: BudgetManager): BudgetLedger {
  return {
    get defaultMaxTokens() {
      return manager.defaultMaxTokens;
    },
    set defaultMaxTokens(n: number) {
      manager.defaultMaxTokens = n;
    },
    has: async (threadId) => manager.has(threadId),
    get: async (threadId) => manager.get(threadId),
    list: async (query) => manager.list(query),
    count: async () => manager.count(),
    headroom: async (threadId) => manager.headroom(threadId),
    reserve: async (threadId, tokens) => manager.reserve(threadId, tokens),
    settle: async (r, usage, agent) => manager.settle(r, usage, agent),
    cancel: async (r) => manager.cancel(r),
    changeDefault: async (maxTokens) => manager.changeDefault(maxTokens),
    setCeiling: async (threadId, maxTokens, options) => manager.setCeiling(threadId, maxTokens, options),
    finish: (threadId) => manager.finish(threadId),
    onThreshold: (fn) => manager.onThreshold(fn),
    close: async () => {},
  };
}
