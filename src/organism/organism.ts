import type { LoadedOrganism, OrganismConfig } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import { EventBus } from '../events/bus.js';
import type { OrganismStatus, ReloadResult } from '../events/types.js';
import { LlmObservers } from '../llm/observer.js';
import { LlmRouter } from '../llm/router.js';
import { PayloadRegistry } from '../payload/index.js';
import { DeliveryObservers } from '../pump/observer.js';
import { Pump, type InjectOptions, type PumpLimits, type StopOptions, type StopReport } from '../pump/pump.js';
import type { Journal, JournalStats, RecoveryReport, ThreadStore, UsageStore } from '../store/types.js';
import { MemoryJournal, MemoryThreadStore, MemoryUsageStore } from '../store/index.js';
import { BudgetManager, type ThreadBudgetInfo } from '../usage/budgets.js';
import { Pricing } from '../usage/pricing.js';
import { UsageTracker } from '../usage/tracker.js';
import { newId } from '../util/ids.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { createLlmAgentHandler, type AgentWorldView } from '../agent/llm-agent.js';
import { configChanges } from './config-changes.js';
import { agentInfo, type AgentInfo } from './views.js';

/** Where the organism keeps its journal, threads, usage and budgets. */
export interface OrganismStorage {
  readonly journal: Journal;
  readonly threads: ThreadStore;
  readonly usage: UsageStore;
  readonly budgets?: {
    load(): unknown[];
    save(snapshots: unknown[]): void;
  };
  close(): void | Promise<void>;
}

export interface OrganismOptions {
  readonly storage?: OrganismStorage;
  readonly logger?: Logger;
  readonly now?: () => number;
}

/**
 * A running organism: the payload registry, LLM router, usage tracking, budgets and the pump,
 * wired together. This is the runtime's front door; the control service is a thin layer on it.
 */
export class Organism {
  readonly bootId = newId();
  readonly bus: EventBus;
  readonly tracker = new UsageTracker();
  readonly budgets: BudgetManager;
  readonly storage: OrganismStorage;
  readonly logger: Logger;
  /** Telemetry hooks: delivery and LLM call observers (metrics and traces attach here). */
  readonly observers: { readonly deliveries: DeliveryObservers; readonly llm: LlmObservers };
  private readonly pump: Pump;
  private loaded: LoadedOrganism;
  private registryValue: PayloadRegistry;
  private router: LlmRouter;
  private started: number | null = null;
  private recovery: RecoveryReport | null = null;
  private budgetsDirty = false;
  private budgetTimer: NodeJS.Timeout | null = null;

  constructor(loaded: LoadedOrganism, options: OrganismOptions = {}) {
    this.loaded = loaded;
    this.logger = options.logger ?? silentLogger();
    this.bus = new EventBus((err) => this.logger.error({ err }, 'event listener failed'));
    const observerFailed = (err: unknown) => this.logger.error({ err }, 'telemetry observer failed');
    this.observers = { deliveries: new DeliveryObservers(observerFailed), llm: new LlmObservers(observerFailed) };
    this.storage = options.storage ?? memoryStorage();
    this.budgets = new BudgetManager({ defaultMaxTokens: loaded.config.maxTokensPerThread });
    this.registryValue = new PayloadRegistry(loaded.payloadTypes);
    this.router = this.makeRouter(loaded.config);
    this.storage.usage.attach(this.tracker);
    this.tracker.subscribe(() => {
      this.budgetsDirty = true;
    });
    this.pump = new Pump(
      {
        registry: this.registryValue,
        journal: this.storage.journal,
        threads: this.storage.threads,
        bus: this.bus,
        tracker: this.tracker,
        budgets: this.budgets,
        llm: this.router,
        logger: this.logger,
        llmHandler: (listener) => createLlmAgentHandler(listener, () => this.peerView()),
        observers: this.observers.deliveries,
        ...(options.now ? { now: options.now } : {}),
      },
      limitsOf(loaded.config),
      loaded.listeners,
    );
  }

  get config(): OrganismConfig {
    return this.loaded.config;
  }

  get configPath(): string | null {
    return this.loaded.path;
  }

  get name(): string {
    return this.loaded.config.name;
  }

  get registry(): PayloadRegistry {
    return this.registryValue;
  }

  get status(): OrganismStatus {
    return this.pump.organismStatus;
  }

  get startedAt(): number | null {
    return this.started;
  }

  get lastRecovery(): RecoveryReport | null {
    return this.recovery;
  }

  get totalMessages(): number {
    return this.pump.messagesSinceStart;
  }

  get activeThreads(): number {
    return this.pump.activeThreadCount;
  }

  get queued(): number {
    return this.pump.queuedCount;
  }

  /** Recovers the journal (re-enqueueing what was not finished) and starts the pump. */
  async start(): Promise<RecoveryReport> {
    const snapshots = this.storage.budgets?.load() ?? [];
    if (snapshots.length > 0) this.budgets.restore(snapshots as Parameters<BudgetManager['restore']>[0]);
    const { messages, report } = await this.storage.journal.recover(this.bootId, this.config.journal.maxAttempts);
    this.recovery = report;
    this.started = Date.now();
    // Budgets change with every LLM call; persisting them at most once a second bounds both
    // the write load and what a crash could lose.
    if (this.storage.budgets) {
      this.budgetTimer = setInterval(() => {
        if (this.budgetsDirty) this.saveBudgets();
      }, 1_000).unref();
    }
    await this.pump.start(messages);
    this.logger.info({ recovery: report }, 'organism started');
    return report;
  }

  inject(to: string, payload: unknown, options?: InjectOptions): Promise<{ threadId: string; messageId: string }> {
    return this.pump.inject(to, payload, options);
  }

  pauseAgent(name: string): void {
    this.pump.pauseAgent(name);
  }

  resumeAgent(name: string): void {
    this.pump.resumeAgent(name);
  }

  killThread(threadId: string) {
    return this.pump.killThread(threadId);
  }

  /** Operator raises or lowers one thread's ceiling. */
  setThreadBudget(threadId: string, maxTokens: number): ThreadBudgetInfo {
    const info = this.budgets.setCeiling(threadId, maxTokens);
    this.saveBudgets();
    return info;
  }

  /** FAILED journal entry back to PENDING and into the pump. */
  async redeliver(messageId: string, threadId: string): Promise<void> {
    await this.pump.redeliver(threadId, () => this.storage.journal.redeliver(messageId));
  }

  /** What a reload would change, without changing anything. */
  planReload(next: LoadedOrganism): ReloadResult {
    const current = new Map(this.pump.listeners().map((r) => [r.name, r]));
    const names = new Set(next.listeners.map((l) => l.config.name));
    const added = next.listeners.filter((l) => !current.has(l.config.name)).map((l) => l.config.name);
    const removed = [...current.keys()].filter((n) => !names.has(n) && !n.startsWith('system.'));
    const updated = next.listeners
      .filter((l) => {
        const r = current.get(l.config.name);
        return r && (r.handlerVersion !== l.handlerVersion || JSON.stringify(r.config) !== JSON.stringify(l.config));
      })
      .map((l) => l.config.name);
    return { success: true, added, removed, updated, ...configChanges(this.config, next.config), error: null };
  }

  /**
   * Applies an already validated configuration: listeners, payload types, limits, providers and
   * pricing (a new router), and the default budget of threads that start from now on. Keys read
   * only at start (journal, metrics, telemetry) are reported in `restartRequired`.
   */
  reload(next: LoadedOrganism): ReloadResult {
    const changes = configChanges(this.config, next.config);
    const registry = new PayloadRegistry(next.payloadTypes);
    const router = this.makeRouter(next.config);
    const listeners = this.pump.reload(next.listeners, limitsOf(next.config), { registry, llm: router });
    this.budgets.defaultMaxTokens = next.config.maxTokensPerThread;
    this.loaded = next;
    this.registryValue = registry;
    this.router = router;
    const result: ReloadResult = { success: true, ...listeners, ...changes, error: null };
    this.bus.emit({ type: 'reload', result });
    this.logger.info({ added: result.added, removed: result.removed, updated: result.updated, changed: result.changed, restartRequired: result.restartRequired }, 'configuration reloaded');
    return result;
  }

  /** Stops the pump (draining in-flight work), then flushes and closes storage. */
  async stop(options?: StopOptions): Promise<StopReport & { journal: JournalStats | null }> {
    const report = await this.pump.stop(options);
    if (this.budgetTimer) clearInterval(this.budgetTimer);
    this.saveBudgets();
    await this.storage.usage.flush();
    // Collected after the drain and before storage closes: what the next boot will recover.
    const journal = await this.storage.journal.stats().catch(() => null);
    await this.storage.close();
    this.logger.info({ report, journal }, 'organism stopped');
    return { ...report, journal };
  }

  /** True when `name` is a listener of this organism now. */
  hasListener(name: string): boolean {
    return this.pump.listener(name) !== undefined;
  }

  agents(): AgentInfo[] {
    return this.pump.listeners().map(agentInfo);
  }

  agent(name: string): AgentInfo {
    const runtime = this.pump.listener(name);
    if (!runtime) throw Errors.AGENT_NOT_FOUND(name);
    return agentInfo(runtime);
  }

  /** A thread's record: live state first, then the store. */
  async thread(id: string) {
    return this.pump.liveThread(id) ?? (await this.storage.threads.get(id));
  }

  flush(): void {
    this.pump.flushThreads();
    this.saveBudgets();
  }

  private saveBudgets(): void {
    this.budgetsDirty = false;
    try {
      this.storage.budgets?.save(this.budgets.snapshot());
    } catch (err) {
      this.logger.error({ err }, 'saving thread budgets failed');
    }
  }

  private makeRouter(config: OrganismConfig): LlmRouter {
    return LlmRouter.fromConfig(config.llm, {
      pricing: new Pricing(config.llm.pricing),
      tracker: this.tracker,
      budgets: this.budgets,
      observer: this.observers.llm,
    });
  }

  /** What an LLM agent may know: its peers (looked up by name) and the payload types. */
  private peerView(): AgentWorldView {
    const registry = this.registryValue;
    return {
      registry,
      replyLimits: { maxReplyBytes: this.loaded.config.llm.maxReplyBytes, maxMessagesPerReply: this.loaded.config.llm.maxMessagesPerReply },
      listener: (name: string) => {
        const runtime = this.pump.listener(name);
        if (!runtime) return null;
        return { name, description: runtime.config.description, payloadType: runtime.config.payload };
      },
    };
  }
}

function limitsOf(config: OrganismConfig): PumpLimits {
  return {
    maxConcurrentHandlers: config.maxConcurrentHandlers,
    maxConcurrentPerAgent: config.maxConcurrentPerAgent,
    maxHops: config.maxHops,
    maxQueue: config.maxQueue,
  };
}

function memoryStorage(): OrganismStorage {
  return {
    journal: new MemoryJournal(),
    threads: new MemoryThreadStore(),
    usage: new MemoryUsageStore(),
    close() {},
  };
}
