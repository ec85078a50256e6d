import { OrganismError } from '../errors/catalogue.js';
import { BudgetManager, localBudgetLedger, type ThreadBudgetSnapshot } from '../usage/budgets.js';
import type { BudgetLedger } from '../core/budget.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { Logger } from '../util/logger.js';
import type { OrganismStorage } from '../core/storage.js';

/**
 * Thread budgets across restarts: makes the ledger (the store's, or an embedded one saved as
 * snapshots), rebuilds the embedded one at boot and saves it as spend changes.
 */
export class BudgetKeeper {
  /** Where budgets are kept and spent. */
  readonly ledger: BudgetLedger;
  /** The embedded ledger, saved as snapshots; null when the store keeps the budgets itself. */
  private readonly local: BudgetManager | null;
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly storage: OrganismStorage,
    defaultMaxTokens: number,
    private readonly logger: Logger,
  ) {
    const listenerFailed = (err: unknown) => this.logger.error({ err }, 'budget listener failed');
    const shared = storage.budgetLedger;
    this.local = shared
      ? null
      : new BudgetManager({
          defaultMaxTokens,
          onListenerError: listenerFailed,
          onArchiveError: (err) => this.logger.error({ err }, "keeping a finished thread's budget failed; tried again at the next save"),
          archive: storage.budgets.archive,
        });
    this.ledger = this.local ? localBudgetLedger(this.local) : shared!({ defaultMaxTokens, onListenerError: listenerFailed });
  }

  /** Every LLM call changes spend: the budgets are saved at the next tick. */
  watch(tracker: UsageTracker): void {
    tracker.subscribe(() => {
      this.dirty = true;
    });
  }

  /**
   * Spend changes with every LLM call and is saved at most once a second (write load); a
   * crash loses none of it: the next boot rebuilds it from the usage events. Ceilings set
   * by the operator are saved at once.
   */
  startSaving(): void {
    if (this.local) {
      this.timer = setInterval(() => {
        if (this.dirty) void this.save();
      }, 1_000).unref();
    }
  }

  /** Stops the periodic save, saves once more and closes the ledger. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.save();
    await this.ledger.close();
  }

  /**
   * Budgets at boot: each persisted ceiling, with the spend rebuilt from the persisted usage
   * events (committed with their deliveries' acks), for every thread with a saved budget or a
   * recovered message. The saved spend lags by up to a second and the events miss calls whose
   * delivery never acked (they were paid for, and run again on redelivery): the largest of the
   * saved, the archived (what the thread had when it last finished) and the events' spend is
   * kept, so no crash gives a thread back tokens it spent. A thread with a saved budget that
   * ended after the last save keeps it as finished.
   */
  async restore(recoveredThreads: readonly string[]): Promise<void> {
    // A shared ledger's rows are the budgets, spend settled as each call ended.
    if (!this.local) return;
    const archive = this.storage.budgets.archive;
    archive.clearLive();
    const saved = new Map<string, ThreadBudgetSnapshot>();
    for (const s of await this.storage.budgets.load()) if (s && typeof s.threadId === 'string') saved.set(s.threadId, s);
    const recovered = new Set(recoveredThreads);
    const candidates = [...new Set([...saved.keys(), ...recovered])];
    if (candidates.length === 0) return;
    // A thread with recovered messages runs again whatever its record says (it is written behind).
    const records = await this.storage.threads.getMany(candidates);
    const live = (id: string) => recovered.has(id) || (records.get(id)?.status ?? 'active') === 'active';
    const spent = await this.storage.usage.threadUsage(candidates);
    const snapshots: ThreadBudgetSnapshot[] = [];
    for (const id of candidates) {
      const s = saved.get(id);
      const kept = archive.get(id);
      const events = spent.get(id);
      if (!s && !events && !kept) continue; // no LLM call yet: its budget starts with its first one
      const spend = [s, kept, events].map((u) => ({ promptTokens: u?.promptTokens ?? 0, completionTokens: u?.completionTokens ?? 0 })).reduce((a, b) => (total(b) > total(a) ? b : a));
      const snapshot = { threadId: id, maxTokens: s?.maxTokens ?? kept?.maxTokens ?? this.ledger.defaultMaxTokens, fired: s?.fired ?? kept?.fired ?? [], ...spend };
      if (live(id)) snapshots.push(snapshot);
      else this.local.keepFinished(snapshot);
    }
    this.local.restore(snapshots);
    await this.save();
  }

  /** Saves the budgets; resolves once saved (failures are logged, never thrown). */
  async save(): Promise<void> {
    this.dirty = false;
    if (!this.local) return;
    try {
      await this.storage.budgets.save(this.local.snapshot());
    } catch (err) {
      // A storage fault (a full disk) was logged once by the storage: tried again next tick.
      if (err instanceof OrganismError && err.code.startsWith('STORAGE_')) {
        this.dirty = true;
        this.logger.debug({ err }, 'saving thread budgets failed; retrying');
      } else this.logger.error({ err }, 'saving thread budgets failed');
    }
  }
}

const total = (u: { promptTokens: number; completionTokens: number }) => u.promptTokens + u.completionTokens;
