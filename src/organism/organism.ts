import type { LoadedOrganism, OrganismConfig } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import { EventBus } from '../events/bus.js';
import { EdgeTraffic } from './edge-traffic.js';
import type { OrganismStatus, ReloadResult } from '../events/types.js';
import { CallRecorder } from '../llm/call-record.js';
import { LlmObservers } from '../llm/observer.js';
import { LlmRouter } from '../llm/router.js';
import { OutputCapWatch } from '../llm/usage-check.js';
import { McpHub, mcpBaseDir, type McpTool, type McpToolResult } from '../mcp/hub.js';
import { PayloadRegistry } from '../payload/index.js';
import { DeliveryObservers } from '../pump/observer.js';
import type { WorkSource } from '../pump/work-source.js';
import { Pump, type InjectOptions, type PumpLimits, type StopOptions, type StopReport } from '../pump/pump.js';
import type { WorkerRecord } from '../store/types.js';
import type { Journal, JournalStats, StorageProblem, LlmCallStore, OperatorStateStore, RecoveryReport, ThreadStore, ThreadUsageTotals, UsageStore } from '../store/types.js';
import { MemoryJournal, MemoryLlmCallStore, MemoryOperatorState, MemoryThreadStore, MemoryUsageStore } from '../store/index.js';
import type { BudgetArchive } from '../usage/budget-archive.js';
import { BudgetManager, type BudgetView, type ThreadBudgetSnapshot } from '../usage/budgets.js';
import type { BudgetLedger, BudgetLedgerFactory } from '../usage/ledger.js';
import { Pricing } from '../usage/pricing.js';
import { UsageTracker } from '../usage/tracker.js';
import { newId } from '../util/ids.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { createLlmAgentHandler, type AgentWorldView } from '../agent/llm-agent.js';
import { providerServes } from '../config/document.js';
import type { ListenerConfig, ReplyFormat } from '../config/types.js';
import { configChanges } from './config-changes.js';
import { acrossProcesses, agentInfo, type AgentInfo } from './views.js';
import { standaloneLink, type ClusterCommand, type ClusterLink } from './cluster-link.js';
import { configDifferences, fingerprint } from '../config/fingerprint.js';
import { isSystemName } from '../pump/system-messages.js';
import type { OrganismEvent } from '../events/types.js';

/** Where the organism keeps its journal, threads, usage and budgets. */
/** Backoff of a step another process announced while the database could not be reached (see follow). */
const FOLLOW_RETRY_MS = 250;
const FOLLOW_RETRY_MAX_MS = 5_000;

export interface OrganismStorage {
  readonly journal: Journal;
  readonly threads: ThreadStore;
  readonly usage: UsageStore;
  /** Recorded LLM and MCP tool calls; in memory when absent. */
  readonly llmCalls?: LlmCallStore;
  /** Thread budgets (a network store answers with promises: see OperatorStateStore). */
  readonly budgets?: {
    load(): unknown[] | Promise<unknown[]>;
    save(snapshots: unknown[]): void | Promise<void>;
    /** Finished threads' budgets (omitted: kept in memory, as long as the process). */
    readonly archive?: BudgetArchive;
  };
  /**
   * A shared store's budget ledger (every process reserves against the same rows); omitted:
   * budgets live in this process (BudgetManager) and are saved through `budgets`.
   */
  readonly budgetLedger?: BudgetLedgerFactory;
  /** Paused agents (omitted: kept in memory, as long as the process lives). */
  readonly operator?: OperatorStateStore;
  /** What is wrong with the data directory now (omitted: nothing can be). */
  problem?(): StorageProblem | null;
  /** Shared mode: the store is the work queue of several processes (omitted: embedded, one process). */
  readonly work?: WorkSource;
  /** Called once if the store is deleted or replaced under the running process (omitted: it cannot be). */
  onLost?(listener: (error: OrganismError) => void): void;
  /** Resolves once every write queued so far has committed (omitted: writes commit as they are made). */
  flush?(): Promise<void>;
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
  /** Messages and denied sends per sender -> receiver since start (the topology's counts). */
  readonly traffic = new EdgeTraffic();
  readonly budgets: BudgetLedger;
  /** The embedded ledger, saved as snapshots; null when the store keeps the budgets itself. */
  private readonly localBudgets: BudgetManager | null;
  readonly storage: OrganismStorage;
  readonly logger: Logger;
  /** Where every LLM call and MCP tool call is recorded (llm.record). */
  readonly llmCalls: LlmCallStore;
  private mcp: McpHub;
  /** Telemetry hooks: delivery and LLM call observers (metrics and traces attach here). */
  readonly observers: { readonly deliveries: DeliveryObservers; readonly llm: LlmObservers };
  private readonly pump: Pump;
  private loaded: LoadedOrganism;
  private registryValue: PayloadRegistry;
  private router: LlmRouter;
  /** Kept across reloads (each makes a new router): a provider over the output cap is logged once. */
  private readonly outputCap: OutputCapWatch;
  private started: number | null = null;
  private recovery: RecoveryReport | null = null;
  private budgetsDirty = false;
  private budgetTimer: NodeJS.Timeout | null = null;
  private readonly operator: OperatorStateStore;
  /** The other processes of a shared organism (alone: nobody). */
  private cluster: ClusterLink = standaloneLink();
  /** Re-reads this process's organism.yaml (a reload announced by another process). */
  private reloadSource: (() => Promise<LoadedOrganism>) | null = null;
  /** Applying what other processes announce, one at a time and in order. */
  private following: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(loaded: LoadedOrganism, options: OrganismOptions = {}) {
    this.loaded = loaded;
    this.logger = options.logger ?? silentLogger();
    this.bus = new EventBus((err) => this.logger.error({ err }, 'event listener failed'));
    this.bus.on((event) => this.traffic.record(event), { relayed: true });
    const observerFailed = (err: unknown) => this.logger.error({ err }, 'telemetry observer failed');
    this.observers = { deliveries: new DeliveryObservers(observerFailed), llm: new LlmObservers(observerFailed) };
    this.storage = options.storage ?? memoryStorage();
    this.operator = this.storage.operator ?? new MemoryOperatorState();
    const listenerFailed = (err: unknown) => this.logger.error({ err }, 'budget listener failed');
    const archive = this.storage.budgets?.archive;
    this.localBudgets = this.storage.budgetLedger
      ? null
      : new BudgetManager({
          defaultMaxTokens: loaded.config.maxTokensPerThread,
          onListenerError: listenerFailed,
          onArchiveError: (err) => this.logger.error({ err }, "keeping a finished thread's budget failed; tried again at the next save"),
          ...(archive ? { archive } : {}),
        });
    this.budgets = this.localBudgets ?? this.storage.budgetLedger!({ defaultMaxTokens: loaded.config.maxTokensPerThread, onListenerError: listenerFailed });
    this.registryValue = new PayloadRegistry(loaded.payloadTypes);
    this.llmCalls = this.storage.llmCalls ?? new MemoryLlmCallStore();
    this.outputCap = new OutputCapWatch(this.logger);
    this.router = this.makeRouter(loaded.config);
    this.mcp = this.makeMcpHub(loaded);
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
        ...(this.storage.work ? { work: this.storage.work } : {}),
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

  /**
   * Recovers the journal (re-enqueueing what was not finished), re-applies the operator's
   * pauses and the threads' budgets, and starts the pump.
   */
  async start(): Promise<RecoveryReport> {
    // Heard before anything stored is read: a pause or kill stored meanwhile is not missed.
    await this.cluster.start({
      event: (event, origin) => this.bus.relay(event, origin),
      command: (command) => this.follow(() => this.applyCommand(command)),
      resync: () => this.follow(() => this.resync()),
    });
    await this.operator.refresh?.();
    const { messages, report } = await this.storage.journal.recover(this.bootId, this.config.journal.maxAttempts);
    await this.restoreBudgets(messages.map((m) => m.threadId));
    const pausedAgents = this.reapplyPauses();
    this.recovery = { ...report, pausedAgents };
    this.started = Date.now();
    // Spend changes with every LLM call and is saved at most once a second (write load); a
    // crash loses none of it: the next boot rebuilds it from the usage events. Ceilings set
    // by the operator are saved at once.
    if (this.storage.budgets && this.localBudgets) {
      this.budgetTimer = setInterval(() => {
        if (this.budgetsDirty) void this.saveBudgets();
      }, 1_000).unref();
    }
    await this.pump.start(messages);
    this.logger.info({ recovery: this.recovery }, 'organism started');
    return this.recovery;
  }

  async inject(to: string, payload: unknown, options?: InjectOptions): Promise<{ threadId: string; messageId: string }> {
    this.assertStorageWritable();
    return this.pump.inject(to, payload, options);
  }

  /** What is wrong with the data directory now (full, damaged, deleted), or null. */
  storageProblem(): StorageProblem | null {
    return this.storage.problem?.() ?? null;
  }

  /**
   * New messages are refused at once while the disk is known to be full or the database
   * server is known to be unreachable (no write is tried that would fail) and once the data
   * directory is gone (writes would still succeed, on a deleted file that no restart reads).
   */
  private assertStorageWritable(): void {
    const error = this.storageProblem()?.error;
    if (error && (error.code === Errors.STORAGE_FULL.code || error.code === Errors.STORAGE_LOST.code || error.code === Errors.STORAGE_UNAVAILABLE.code)) throw error;
  }

  /**
   * Pauses an agent, persisted so it outlives restarts and crashes: an embedded store persists
   * it before the pump pauses; a network store's write is under way as the pump pauses, and the
   * returned promise resolves once it has committed (callers answer the operator after it).
   * An unknown agent throws at once.
   */
  pauseAgent(name: string): Promise<void> {
    if (!this.pump.listener(name)) throw Errors.AGENT_NOT_FOUND(name);
    const persisted = this.operator.setPaused(name, true);
    this.pump.pauseAgent(name);
    return Promise.resolve(persisted).then(() => this.cluster.publishCommand({ kind: 'paused', agent: name, paused: true }));
  }

  resumeAgent(name: string): Promise<void> {
    if (!this.pump.listener(name)) throw Errors.AGENT_NOT_FOUND(name);
    const persisted = this.operator.setPaused(name, false);
    this.pump.resumeAgent(name);
    return Promise.resolve(persisted).then(() => this.cluster.publishCommand({ kind: 'paused', agent: name, paused: false }));
  }

  /** Kills a thread here and, once it is stored as killed, in every other process of a shared organism. */
  async killThread(threadId: string) {
    const record = await this.pump.killThread(threadId);
    await this.storage.flush?.();
    await this.cluster.publishCommand({ kind: 'kill', threadId });
    return record;
  }

  /**
   * Joins the other processes of a shared organism (before `start`): this process's events go
   * to them and theirs come onto this bus (for listeners that ask for relayed events); pauses,
   * kills and reloads made anywhere apply here. `reloadConfig` re-reads this process's own
   * organism.yaml when another process announces a reload.
   */
  joinCluster(link: ClusterLink, options: { reloadConfig?: () => Promise<LoadedOrganism> } = {}): void {
    this.cluster = link;
    this.reloadSource = options.reloadConfig ?? null;
    this.bus.on((event) => {
      if (sharedEvent(event)) link.publishEvent(event);
    });
  }

  /** The configuration this process runs, as the processes of a shared organism compare it. */
  get configIdentity() {
    return fingerprint(this.loaded.config);
  }

  /**
   * After a reload here: stores the configuration now running and tells the other processes,
   * which reload too when their own organism.yaml is the same. Nothing to do alone.
   */
  async shareReload(): Promise<void> {
    await this.cluster.publishConfig(this.configIdentity);
  }

  /**
   * Operator raises or lowers one thread's ceiling, persisted at once. A thread that has not
   * made an LLM call yet, or does not exist yet, gets a budget with that ceiling, which its
   * first inject runs under. A finished thread's budget takes it too (a later inject into the
   * thread goes on under it), except a killed thread's: it accepts no more messages.
   */
  async setThreadBudget(threadId: string, maxTokens: number): Promise<BudgetView> {
    const thread = await this.thread(threadId);
    if (thread?.status === 'killed') throw Errors.BUDGET_THREAD_FINISHED(threadId, thread.status);
    const info = await this.budgets.setCeiling(threadId, maxTokens, { create: true });
    await this.saveBudgets();
    return info;
  }

  /** A thread's budget, live or finished (its figures kept for its next inject). Null when it never had one. */
  async threadBudget(threadId: string): Promise<BudgetView | null> {
    return this.budgets.get(threadId);
  }

  /** A thread's LLM usage from the usage store (live threads: what has been committed so far). */
  async threadUsage(threadId: string): Promise<ThreadUsageTotals | null> {
    return (await this.storage.usage.threadUsage([threadId])).get(threadId) ?? null;
  }

  /** FAILED journal entry back to PENDING and into the pump. */
  async redeliver(messageId: string, threadId: string): Promise<void> {
    this.assertStorageWritable();
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
    // Changed MCP servers get new connections (calls under way on the old ones fail as the old hub closes).
    if (JSON.stringify(next.config.mcpServers ?? []) !== JSON.stringify(this.loaded.config.mcpServers ?? [])) {
      const old = this.mcp;
      this.mcp = this.makeMcpHub(next);
      void old.close();
    }
    this.reapplyPauses(); // an agent removed and added back is still the one the operator paused
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
    this.stopping = true;
    const report = await this.pump.stop(options);
    await this.cluster.close().catch((err: unknown) => this.logger.warn({ err }, 'closing the link to the other processes failed'));
    await this.mcp.close();
    if (this.budgetTimer) clearInterval(this.budgetTimer);
    await this.saveBudgets();
    await this.budgets.close?.();
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

  /**
   * The agents as the whole organism runs them: in shared mode, queue depth and in flight are
   * summed over every process from the store (this process's memory holds only its own share);
   * embedded, the same as agents().
   */
  async agentsAcross(): Promise<AgentInfo[]> {
    const work = this.storage.work;
    if (!work) return this.agents();
    const load = await work.agentLoad();
    return this.agents().map((a) => acrossProcesses(a, load.get(a.name)));
  }

  async agentAcross(name: string): Promise<AgentInfo> {
    const info = this.agent(name);
    const work = this.storage.work;
    return work ? acrossProcesses(info, (await work.agentLoad()).get(name)) : info;
  }

  /**
   * Threads with work queued or in flight: in shared mode, the store's active threads (every
   * process's; this one's memory holds only those it touched); embedded, this process's.
   */
  async activeThreadsAcross(): Promise<number> {
    if (!this.storage.work) return this.activeThreads;
    return (await this.storage.threads.list({ status: 'active', limit: 0, offset: 0 })).total;
  }

  /** The processes of a shared organism (null: embedded, this process is the organism). */
  async workers(): Promise<readonly WorkerRecord[] | null> {
    return this.storage.work ? this.storage.work.workers() : null;
  }

  /**
   * A thread's record. Embedded: live state first (the store's is written behind it), then the
   * store. Shared mode: the store's, which every process's outcomes and kills write in their
   * own transactions, so every serve reads the same (a kill made on another one included).
   */
  async thread(id: string) {
    if (this.storage.work) return (await this.storage.threads.get(id)) ?? this.pump.liveThread(id);
    return this.pump.liveThread(id) ?? (await this.storage.threads.get(id));
  }

  flush(): void {
    this.pump.flushThreads();
    void this.saveBudgets();
  }

  /**
   * Applies what another process announced, after what came before it. Each step reads what is
   * stored and applies it, so one the database could not be reached for (an outage, told once
   * by the store) is tried again with backoff until it answers, rather than lost.
   */
  private follow(work: () => Promise<void>): void {
    this.following = this.following
      .then(async () => {
        for (let delay = FOLLOW_RETRY_MS; ; delay = Math.min(delay * 2, FOLLOW_RETRY_MAX_MS)) {
          try {
            return await work();
          } catch (err) {
            if (!Errors.STORAGE_UNAVAILABLE.is(err)) throw err;
            if (this.stopping) return;
          }
          await new Promise((resolve) => setTimeout(resolve, delay).unref());
        }
      })
      .catch((err: unknown) => this.logger.error({ err }, 'applying what another process announced failed'));
  }

  private async applyCommand(command: ClusterCommand): Promise<void> {
    switch (command.kind) {
      case 'kill':
        if (this.pump.killThreadHere(command.threadId)) this.logger.info({ threadId: command.threadId }, 'thread killed by another process; its work here aborted');
        return;
      case 'paused':
        return this.followPauses();
      case 'reload':
        return this.followReload();
    }
  }

  /** Notifications were lost while the link was down: everything they could have said, read from the store. */
  private async resync(): Promise<void> {
    await this.followPauses();
    const ids = this.pump.liveThreadIds();
    if (ids.length > 0) {
      for (const [id, record] of await this.storage.threads.getMany(ids)) if (record.status === 'killed') this.pump.killThreadHere(id);
    }
    await this.followReload();
  }

  /** Pauses and resumes this process's agents to match the stored paused set. */
  private async followPauses(): Promise<void> {
    await this.operator.refresh?.();
    const paused = new Set(this.operator.pausedAgents());
    for (const runtime of this.pump.listeners()) {
      if (isSystemName(runtime.name)) continue;
      if (paused.has(runtime.name) && !runtime.paused) this.pump.pauseAgent(runtime.name);
      else if (!paused.has(runtime.name) && runtime.paused) this.pump.resumeAgent(runtime.name);
    }
  }

  /**
   * The stored configuration changed: this process re-reads its own organism.yaml and swaps to
   * it when it is the stored one; otherwise it says what differs and keeps running the old one
   * (an operator deploys the file, then reloads again).
   */
  private async followReload(): Promise<void> {
    const stored = await this.cluster.storedConfig();
    if (!stored || stored.hash === this.configIdentity.hash) return;
    if (!this.reloadSource) {
      this.logger.error('the organism was reloaded by another process, but this one cannot re-read its configuration; still running the previous one');
      return;
    }
    let next: LoadedOrganism;
    try {
      next = await this.reloadSource();
    } catch (err) {
      this.logger.error({ err }, 'the organism was reloaded by another process, but this one\'s organism.yaml does not load; still running the previous configuration');
      return;
    }
    const mine = fingerprint(next.config);
    if (mine.hash !== stored.hash) {
      const difference = configDifferences(mine.text, stored.text).join('; ');
      this.logger.error({ difference }, `the organism was reloaded by another process, but this one's organism.yaml differs (${difference}); still running the previous configuration`);
      return;
    }
    this.reload(next);
    await this.cluster.running(mine);
  }

  /** Pauses the persisted paused agents that exist; returns their names. */
  private reapplyPauses(): string[] {
    const paused: string[] = [];
    for (const name of this.operator.pausedAgents()) {
      const runtime = this.pump.listener(name);
      if (!runtime) continue; // not in this configuration; paused again if it comes back
      if (!runtime.paused) this.pump.pauseAgent(name);
      paused.push(name);
    }
    return paused;
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
  private async restoreBudgets(recoveredThreads: readonly string[]): Promise<void> {
    // A shared ledger's rows are the budgets, spend settled as each call ended.
    if (!this.localBudgets) return;
    const archive = this.storage.budgets?.archive;
    archive?.clearLive();
    const saved = new Map<string, ThreadBudgetSnapshot>();
    for (const s of ((await this.storage.budgets?.load()) ?? []) as ThreadBudgetSnapshot[]) if (s && typeof s.threadId === 'string') saved.set(s.threadId, s);
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
      const kept = archive?.get(id) ?? null;
      const events = spent.get(id);
      if (!s && !events && !kept) continue; // no LLM call yet: its budget starts with its first one
      const spend = [s, kept, events]
        .map((u) => ({ promptTokens: u?.promptTokens ?? 0, completionTokens: u?.completionTokens ?? 0 }))
        .reduce((a, b) => (total(b) > total(a) ? b : a));
      const snapshot = { threadId: id, maxTokens: s?.maxTokens ?? kept?.maxTokens ?? this.budgets.defaultMaxTokens, fired: s?.fired ?? kept?.fired ?? [], ...spend };
      if (live(id)) snapshots.push(snapshot);
      else this.localBudgets.keepFinished(snapshot);
    }
    this.localBudgets.restore(snapshots);
    await this.saveBudgets();
  }

  /** Saves the budgets; resolves once saved (failures are logged, never thrown). */
  private async saveBudgets(): Promise<void> {
    this.budgetsDirty = false;
    if (!this.localBudgets) return;
    try {
      await this.storage.budgets?.save(this.localBudgets.snapshot());
    } catch (err) {
      // A storage fault (a full disk) was logged once by the storage: tried again next tick.
      if (err instanceof OrganismError && err.code.startsWith('STORAGE_')) {
        this.budgetsDirty = true;
        this.logger.debug({ err }, 'saving thread budgets failed; retrying');
      } else this.logger.error({ err }, 'saving thread budgets failed');
    }
  }

  private makeRouter(config: OrganismConfig): LlmRouter {
    return LlmRouter.fromConfig(config.llm, {
      pricing: new Pricing(config.llm.pricing),
      tracker: this.tracker,
      budgets: this.budgets,
      recorder: new CallRecorder(this.llmCalls, config.llm.record ?? 'full'),
      observer: this.observers.llm,
      maxReplyBytes: config.llm.maxReplyBytes,
      outputCap: this.outputCap,
    });
  }

  private makeMcpHub(loaded: LoadedOrganism): McpHub {
    return new McpHub(loaded.config.mcpServers ?? [], mcpBaseDir(loaded.path), this.logger);
  }

  /** The reply format of an agent: its own, else that of the provider serving its model (first by priority), else `tools`. */
  private replyFormatOf(listener: ListenerConfig): ReplyFormat {
    if (listener.replyFormat) return listener.replyFormat;
    const model = listener.model;
    const providers = [...this.config.llm.providers].sort((a, b) => a.priority - b.priority);
    const provider = model === null ? providers[0] : providers.find((p) => providerServes(p, model));
    return provider?.replyFormat ?? 'tools';
  }

  private async callMcp(call: Parameters<AgentWorldView['callMcp']>[0]): Promise<McpToolResult> {
    const startedAt = Date.now();
    const started = performance.now();
    let result: McpToolResult;
    let error: string | null = null;
    try {
      result = await this.mcp.call(call.tool.server, call.tool.name, call.arguments, call.signal);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      result = { text: error, isError: true };
      if (Errors.ABORTED.is(err)) {
        this.recordTool(call, startedAt, started, null, error);
        throw err;
      }
    }
    this.recordTool(call, startedAt, started, result, error);
    return result;
  }

  private recordTool(call: Parameters<AgentWorldView['callMcp']>[0], startedAt: number, started: number, result: McpToolResult | null, error: string | null): void {
    new CallRecorder(this.llmCalls, this.config.llm.record ?? 'full').tool({
      id: newId(),
      llmCallId: call.llmCallId,
      threadId: call.threadId,
      messageId: call.messageId,
      agent: call.agent,
      server: call.tool.server,
      tool: call.tool.name,
      arguments: call.arguments,
      result: error === null ? (result?.text ?? null) : null,
      isError: error !== null || (result?.isError ?? false),
      error,
      startedAt,
      durationMs: performance.now() - started,
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
      replyFormat: (listener) => this.replyFormatOf(listener),
      mcpTools: (servers): Promise<McpTool[]> => this.mcp.tools(servers),
      callMcp: (call) => this.callMcp(call),
    };
  }
}

/**
 * Events other processes' live views show. A process's own status (starting, stopping) and its
 * reload report stay with it: a worker stopping is not the organism stopping.
 */
function sharedEvent(event: OrganismEvent): boolean {
  return event.type !== 'organism_status' && event.type !== 'reload';
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
    operator: new MemoryOperatorState(),
    close() {},
  };
}

const total = (u: { promptTokens: number; completionTokens: number }) => u.promptTokens + u.completionTokens;
