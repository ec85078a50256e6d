import { acceptedTypes } from '../config/accepted-types.js';
import type { LoadedOrganism, OrganismConfig } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import { EventBus } from '../events/bus.js';
import { EdgeTraffic } from './edge-traffic.js';
import { WorkElsewhere } from './work-elsewhere.js';
import { WorkerWatch } from './worker-watch.js';
import type { OrganismStatus, ReloadResult } from '../events/types.js';
import { CallRecorder } from '../llm/call-record.js';
import type { Guard } from '../core/guard.js';
import { privacyRedactor } from '../config/guards.js';
import { Redactor } from '../util/pii.js';
import { setLogRedactor } from '../util/logger.js';
import { redactingCalls } from './redacting-calls.js';
import { LlmObservers } from '../llm/observer.js';
import { LlmRouter, type RouterDeps } from '../llm/router.js';
import type { LlmProvider } from '../llm/types.js';
import { OutputCapWatch } from '../llm/usage-check.js';
import type { McpTool } from '../mcp/hub.js';
import { PayloadRegistry } from '../payload/index.js';
import { DeliveryObservers } from '../pump/observer.js';
import { Pump, type InjectOptions, type PumpLimits, type StopOptions, type StopReport } from '../pump/pump.js';
import type { OrganismStorage, StorageParts } from '../core/storage.js';
import { hostname } from 'node:os';
import type { AgentLoad, ProcessList, WorkerRecord } from '../core/work-source.js';
import type { JournalStats, RecoveryReport } from '../core/journal.js';
import type { StorageProblem, LlmCallStore, OperatorStateStore } from '../core/storage.js';
import type { ThreadRecord } from '../core/thread.js';
import type { ThreadUsageTotals } from '../core/usage.js';
import { MemoryJournal, MemoryThreadStore, MemoryUsageStore } from '../store/index.js';
import { completeStorage } from '../store/complete.js';
import type { BudgetView } from '../usage/budgets.js';
import type { BudgetLedger } from '../core/budget.js';
import { Pricing } from '../usage/pricing.js';
import { UsageTracker } from '../usage/tracker.js';
import { newId } from '../util/ids.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { createLlmAgentHandler, type AgentWorldView } from '../agent/llm-agent.js';
import { createRemoteA2aHandler } from '../agent/a2a-remote.js';
import { withA2aPush } from './a2a-push.js';
import type { Handler } from '../core/handler.js';
import type { ListenerConfig, RemoteA2aConfig } from '../config/types.js';
import { configChanges, listenerFieldChanges } from './config-changes.js';
import { listenerInfo, withLoad, type AgentInfo } from './views.js';
import type { ClusterLink } from '../cluster/link.js';
import { fingerprint } from '../config/fingerprint.js';
import { BudgetKeeper } from './budget-keeper.js';
import { Follower } from './follower.js';
import { McpCalls } from './mcp-calls.js';
import { CodeToolCalls } from './code-tool-calls.js';
import { organismQueries, type OrganismQueries } from './queries.js';
import { attemptLimits } from '../pump/retry-policy.js';
import { replyFormatOf } from './reply-format.js';
import { Inbox } from './inbox.js';
import { ThreadHolds } from './holds.js';
import { LoopGuard } from './loop-guard.js';
import { ERASED, type ThreadErasure, type ThreadHold } from '../core/thread.js';
import { ForkReplay } from './fork-replay.js';
import { forkThread, MAX_FORK_HISTORY, type ForkOptions, type ForkResult } from './fork.js';
import { compareThreads, type CompareSide, type ThreadComparison } from './compare.js';
import { cassetteOf, type Cassette } from './cassette.js';
import { MAX_REPLAYED_CALLS } from './fork-replay.js';
import { ForkConfigs, forkConfigProblems, forkConfigRoot } from './fork-configs.js';
import { loadOrganismToRun } from '../config/index.js';
import type { ListenerSetup, ListenerView } from '../pump/setup.js';
import type { Message } from '../core/message.js';
import { Scheduler } from './schedules.js';
import { Webhooks } from './webhooks.js';
import type { ScheduleSpec } from '../core/schedule.js';
import { scheduleProblems } from '../config/interop.js';
import { resolveInjectPayload } from '../payload/index.js';

export type { OrganismStorage, StorageParts } from '../core/storage.js';

export interface OrganismOptions {
  /** The store (completed by completeStorage); default: everything in memory. */
  readonly storage?: StorageParts;
  readonly logger?: Logger;
  readonly now?: () => number;
  /**
   * Providers that answer every LLM call instead of the configured ones (`llm.providers`), kept
   * across reloads: the test kit's scripted model (organism/testing). Pricing still applies.
   */
  readonly providers?: readonly LlmProvider[];
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
  /** What the other processes of a clustered organism did, from their events (embedded: nothing). */
  private readonly elsewhere = new WorkElsewhere();
  readonly budgets: BudgetLedger;
  /** Keeps the budgets across restarts (rebuilt at boot, saved as spend changes). */
  private readonly budgetKeeper: BudgetKeeper;
  readonly storage: OrganismStorage;
  /** What the control service reads (its routes never hold the storage). */
  readonly queries: OrganismQueries;
  readonly logger: Logger;
  /** Where every LLM call and MCP tool call is recorded (llm.record). */
  readonly llmCalls: LlmCallStore;
  private readonly mcp: McpCalls;
  private readonly codeTools: CodeToolCalls;
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
  private readonly operator: OperatorStateStore;
  /** Following the other processes of a clustered organism (alone: nobody to follow). */
  private readonly follower: Follower;
  private readonly providerOverride: readonly LlmProvider[] | null;
  /** Asks to people (builtin:human listeners): listed, answered, rejected, expired. */
  readonly inbox: Inbox;
  private redactorFor: LoadedOrganism | null = null;
  private redactorValue: Redactor = Redactor.NONE;
  private redactsLogs = false;
  /** Held threads (issue 30): an operator's pause or the loop breaker's hold. */
  readonly holds: ThreadHolds;
  /** Answers forks' LLM calls from their source threads' records (time travel). */
  private readonly forkReplay: ForkReplay;
  /** The organism.yaml files forks run under (configPath). */
  private readonly forkConfigs: ForkConfigs;
  /** `schedules:` and the schedules added at run time: ticks injected as new threads. */
  readonly scheduler: Scheduler;
  /** `webhooks:`: events journaled and sent, signed, off the pump's path. */
  readonly webhooks: Webhooks;

  constructor(loaded: LoadedOrganism, options: OrganismOptions = {}) {
    this.loaded = loaded;
    this.providerOverride = options.providers ?? null;
    this.logger = options.logger ?? silentLogger();
    this.bus = new EventBus((err) => this.logger.error({ err }, 'event listener failed'));
    this.bus.on((event) => this.traffic.record(event), { relayed: true });
    this.bus.on((event, origin) => this.elsewhere.record(event, origin), { relayed: true });
    const observerFailed = (err: unknown) => this.logger.error({ err }, 'telemetry observer failed');
    this.observers = { deliveries: new DeliveryObservers(observerFailed), llm: new LlmObservers(observerFailed) };
    this.storage = completeStorage(options.storage ?? memoryStorage());
    this.operator = this.storage.operator;
    this.budgetKeeper = new BudgetKeeper(this.storage, loaded.config.maxTokensPerThread, this.logger);
    this.budgets = this.budgetKeeper.ledger;
    this.registryValue = new PayloadRegistry(withA2aPush(loaded).payloadTypes);
    this.llmCalls = redactingCalls(this.storage.llmCalls, () => this.redactor);
    this.queries = organismQueries({ storage: this.storage, budgets: this.budgets, llmCalls: this.llmCalls, bus: this.bus });
    this.outputCap = new OutputCapWatch(this.logger);
    this.forkReplay = new ForkReplay(this.llmCalls);
    this.forkConfigs = new ForkConfigs({ load: (path) => loadOrganismToRun(path), build: (next) => this.setupOf(next), logger: this.logger });
    this.router = this.makeRouter(loaded.config);
    this.mcp = new McpCalls(loaded, this.llmCalls, () => this.config.llm.record ?? 'full', this.logger);
    this.codeTools = new CodeToolCalls(this.llmCalls, () => this.config.llm.record ?? 'full');
    this.storage.usage.attach(this.tracker);
    this.budgetKeeper.watch(this.tracker);
    const now = options.now ?? Date.now;
    this.holds = new ThreadHolds({
      operator: this.operator,
      bus: this.bus,
      logger: this.logger,
      now,
      thread: (id) => this.thread(id),
      setHeld: (id, held) => this.pump.holdThread(id, held),
    });
    const loopGuard = new LoopGuard({
      journal: this.storage.journal,
      usage: this.storage.usage,
      bus: this.bus,
      logger: this.logger,
      now,
      config: () => this.loaded.config.loopGuard ?? null,
      listener: (name) => this.pump.listener(name)?.config.loopGuard,
      overrides: () => this.pump.listeners().map((l) => l.config.loopGuard),
      hold: (id) => this.holds.of(id),
      holdThread: (id, request) => this.holds.hold(id, request),
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
        // A `handler: a2a:<url>` listener has no module either: its handler calls the remote agent.
        llmHandler: (listener) => (listener.remote ? this.remoteA2aHandler(listener, listener.remote) : createLlmAgentHandler(listener, () => this.peerView())),
        guards: (name) => guardsIn(this.loaded, name),
        setups: this.forkConfigs,
        payloadRedactor: () => (this.config.privacy?.redactPayloads && this.redactor.active ? this.redactor : null),
        observers: this.observers.deliveries,
        queue: this.storage.queue,
        loopGuard,
        ...(options.now ? { now: options.now } : {}),
      },
      limitsOf(loaded.config),
      withA2aPush(loaded).listeners,
    );
    this.inbox = new Inbox({
      journal: this.storage.journal,
      pump: this.pump,
      bus: this.bus,
      logger: this.logger,
      registry: () => this.registryValue,
      maxHops: () => this.config.maxHops,
      now: options.now ?? Date.now,
    });
    this.webhooks = new Webhooks({
      store: this.storage.webhooks,
      bus: this.bus,
      configured: () => this.config.webhooks ?? [],
      owner: this.bootId,
      logger: this.logger,
      ...(options.now ? { now: options.now } : {}),
    });
    this.scheduler = new Scheduler({
      store: this.storage.schedules,
      configured: () => this.config.schedules ?? [],
      inject: (spec, tickAt, threadId) => this.inject(spec.to, spec.payload, { threadId, metadata: { schedule: spec.name, scheduled_for: new Date(tickAt).toISOString() } }),
      injected: async (threadId) => (await this.storage.journal.list({ threadId, limit: 1, offset: 0 })).total > 0,
      onFired: (spec, tick) => this.webhooks.emit('schedule_fired', `${spec.name}:${tick.tickAt}`, { schedule: spec.name, tickAt: tick.tickAt, threadId: tick.threadId, late: tick.late }),
      logger: this.logger,
    });
    this.follower = new Follower({
      pump: this.pump,
      bus: this.bus,
      operator: this.operator,
      threads: this.storage.threads,
      logger: this.logger,
      configIdentity: () => this.configIdentity,
      reload: (next) => this.reload(next),
    });
  }

  /** The handler of a remote A2A agent's listener; its streamed status texts go out as live `llm_delta` events. */
  private remoteA2aHandler(listener: ListenerConfig, remote: RemoteA2aConfig): Handler {
    return createRemoteA2aHandler(listener, remote, {
      registry: () => this.registryValue,
      acceptedBy: (name) => {
        const runtime = this.pump.listener(name);
        return runtime ? acceptedTypes(runtime.config).flatMap((t) => this.registryValue.get(t) ?? []) : [];
      },
      onUpdate: (ctx, taskId, text) => this.bus.emit({ type: 'llm_delta', threadId: ctx.threadId, messageId: ctx.messageId, agent: ctx.self, callId: `a2a:${taskId}`, text }),
    });
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

  /** Messages journaled since this process started, by it and (heard from their events) by the other processes of a cluster. */
  get totalMessages(): number {
    return this.pump.messagesSinceStart + this.elsewhere.messages;
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
    await this.follower.start();
    await this.operator.refresh?.();
    const { messages, report } = await this.storage.queue.recover(this.bootId, attemptLimits(this.config));
    await this.budgetKeeper.restore(messages.map((m) => m.threadId));
    const pausedAgents = this.reapplyPauses();
    this.recovery = { ...report, pausedAgents };
    this.started = Date.now();
    this.budgetKeeper.startSaving();
    await this.inbox.load();
    await this.holds.load();
    await this.pump.start(messages);
    this.inbox.start();
    this.webhooks.start();
    this.scheduler.start();
    this.logger.info({ recovery: this.recovery }, 'organism started');
    return this.recovery;
  }

  async inject(to: string, payload: unknown, options?: InjectOptions): Promise<{ threadId: string; messageId: string }> {
    this.assertStorageWritable();
    return this.pump.inject(to, payload, options);
  }

  /**
   * Forks a thread (time travel, issue 29): a new thread with the source's history up to
   * `atMessageId`, running on from it under the current configuration, its LLM calls answered
   * from the source's record while their requests match. The source is never changed.
   */
  async fork(threadId: string, options: ForkOptions = {}): Promise<ForkResult> {
    if (!options.dryRun) this.assertStorageWritable();
    return forkThread(
      {
        journal: this.storage.journal,
        llmCalls: this.llmCalls,
        thread: (id) => this.thread(id),
        isListener: (name) => this.pump.listener(name) !== undefined,
        recordMode: this.config.llm.record ?? 'full',
        inject: (to, body, injectOptions) => this.pump.inject(to, body, injectOptions),
        forkConfig: (configPath, at) => this.forkConfig(configPath, at),
      },
      threadId,
      options,
    );
  }

  /** Reads and checks a fork's organism.yaml: it may change listeners, not add any (their queues are the running organism's). */
  private async forkConfig(configPath: string, at: Message) {
    const { path, hash, loaded } = await this.forkConfigs.prepare(configPath, forkConfigRoot(this.configPath));
    const problems = forkConfigProblems(loaded, { listeners: this.pump.listeners().map((l) => l.name), mcpServers: this.config.mcpServers ?? [] }, at);
    if (problems.length > 0) {
      throw Errors.FORK_CONFIG_INVALID.withData(
        problems.map((message) => ({ location: 'config', field: 'configPath', message })),
        configPath,
        problems.join('; '),
      );
    }
    const plan = this.planReload(loaded);
    return { path, hash, updated: plan.updated, removed: plan.removed, changed: plan.changed };
  }

  /**
   * What a fork's deliveries run with under another organism.yaml: its listeners (handlers as it
   * loaded them; LLM agents seeing its peers and payload types), its LLM router (providers,
   * pricing, llm.record) and guardrails. MCP connections are the running organism's.
   */
  private setupOf(next: LoadedOrganism): ListenerSetup {
    const running = withA2aPush(next);
    const registry = new PayloadRegistry(running.payloadTypes);
    const listeners = new Map<string, ListenerView>();
    const world = () => this.worldOf(next, registry, (name) => listeners.get(name)?.config ?? null);
    for (const l of running.listeners) {
      const handler = l.handler ?? (l.config.remote ? this.remoteA2aHandler(l.config, l.config.remote) : l.config.human ? answeredByPeople : createLlmAgentHandler(l.config, world));
      listeners.set(l.config.name, { config: l.config, handler });
    }
    return { listeners, registry, llm: this.makeRouter(next.config), guards: (name) => guardsIn(next, name) };
  }

  /**
   * A thread as a cassette (time travel): a versioned JSON document of its messages and recorded
   * LLM and tool calls, as recorded (prompts subject to llm.record; no header, so no key).
   */
  async exportThread(threadId: string): Promise<Cassette> {
    const thread = await this.thread(threadId);
    if (!thread) throw Errors.THREAD_NOT_FOUND(threadId);
    const [entries, recorded] = await Promise.all([
      this.storage.journal.list({ threadId, limit: MAX_FORK_HISTORY, offset: 0, order: 'oldest' }),
      this.llmCalls.forThread(threadId, { limit: MAX_REPLAYED_CALLS, offset: 0 }),
    ]);
    return cassetteOf(this.config.name, thread, entries.items, recorded.calls, recorded.tools);
  }

  /** Two threads aligned message by message, with their first divergence and each one's tokens, cost and latency (time travel). */
  async compare(a: string, b: string): Promise<ThreadComparison> {
    const side = async (id: string): Promise<CompareSide> => {
      const thread = await this.thread(id);
      if (!thread) throw Errors.THREAD_NOT_FOUND(id);
      const [entries, recorded] = await Promise.all([
        this.storage.journal.list({ threadId: id, limit: MAX_FORK_HISTORY, offset: 0, order: 'oldest' }),
        this.llmCalls.forThread(id, { limit: MAX_REPLAYED_CALLS, offset: 0 }),
      ]);
      return { thread, entries: entries.items, calls: recorded.calls, tools: recorded.tools };
    };
    const [x, y] = await Promise.all([side(a), side(b)]);
    return compareThreads(x, y);
  }

  /**
   * Adds a schedule at run time (kept in the store: every process of the organism fires it, and
   * it outlives restarts). Refused when a field is wrong, the target or payload does not fit, or
   * the name is taken.
   */
  async addSchedule(input: ScheduleSpec): Promise<void> {
    const spec: ScheduleSpec = input.cron !== null && input.timezone === null ? { ...input, timezone: 'UTC' } : input;
    const problem = scheduleProblems(spec)[0];
    if (problem) throw Errors.INVALID_SCHEDULE(problem.key === 'catchUp' ? 'catch_up' : problem.key, problem.message);
    const target = this.config.listeners.find((l) => l.name === spec.to);
    if (!target) throw Errors.INVALID_SCHEDULE('to', `no listener is named \`${spec.to}\``);
    const accepted = acceptedTypes(target)
      .map((name) => this.registryValue.get(name))
      .filter((t) => t !== undefined);
    resolveInjectPayload(spec.payload, accepted, this.registryValue, spec.to);
    if (this.scheduler.isConfigured(spec.name)) throw Errors.SCHEDULE_EXISTS(spec.name, 'in organism.yaml');
    if (!(await this.scheduler.add(spec))) throw Errors.SCHEDULE_EXISTS(spec.name, 'added at run time');
  }

  /** Removes a schedule added at run time (a configured one is changed in organism.yaml). */
  async removeSchedule(name: string): Promise<void> {
    if (this.scheduler.isConfigured(name)) throw Errors.SCHEDULE_CONFIGURED(name);
    if (!(await this.scheduler.remove(name))) throw Errors.SCHEDULE_NOT_FOUND(name);
  }

  /** What is wrong with the data directory now (full, damaged, deleted), or null. */
  storageProblem(): StorageProblem | null {
    return this.storage.problem();
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
   * Pauses a listener, persisted so it outlives restarts and crashes: an embedded store persists
   * it before the pump pauses; a network store's write is under way as the pump pauses, and the
   * returned promise resolves once it has committed (callers answer the operator after it).
   * An unknown listener throws at once.
   */
  pauseListener(name: string): Promise<void> {
    if (!this.pump.listener(name)) throw Errors.AGENT_NOT_FOUND(name);
    const persisted = this.operator.setPaused(name, true);
    this.pump.pauseListener(name);
    return Promise.resolve(persisted).then(() => this.follower.publishCommand({ kind: 'paused', agent: name, paused: true }));
  }

  resumeListener(name: string): Promise<void> {
    if (!this.pump.listener(name)) throw Errors.AGENT_NOT_FOUND(name);
    const persisted = this.operator.setPaused(name, false);
    this.pump.resumeListener(name);
    return Promise.resolve(persisted).then(() => this.follower.publishCommand({ kind: 'paused', agent: name, paused: false }));
  }

  /**
   * Kills a thread here and, once it is stored as killed, in every other process of a clustered
   * organism. `by` (the operator's token name) is recorded on the asks the kill closes.
   */
  async killThread(threadId: string, by = 'kill') {
    const record = await this.pump.killThread(threadId);
    await this.holds.killed(threadId, by);
    await this.inbox.threadKilled(threadId, by);
    await this.storage.flush();
    await this.follower.publishCommand({ kind: 'kill', threadId });
    return record;
  }

  /**
   * Holds a thread (issue 30): its deliveries stay PENDING (nothing in flight is interrupted)
   * until it is resumed, here and in every process (the hold is stored first). Idempotent.
   */
  async pauseThread(threadId: string, by: string, reason?: string): Promise<{ thread: ThreadRecord; hold: ThreadHold }> {
    const { hold } = await this.holds.hold(threadId, { rule: 'operator', reason: reason?.trim() || `paused by ${by}`, evidence: null, by });
    return { thread: await this.threadView(threadId), hold };
  }

  /** Resumes a held thread; `raiseLimits` doubles the loop breaker's limits for it. */
  async resumeThread(threadId: string, by: string, raiseLimits = false): Promise<{ thread: ThreadRecord; hold: ThreadHold }> {
    const { hold } = await this.holds.resume(threadId, by, raiseLimits);
    return { thread: await this.threadView(threadId), hold };
  }

  /** A thread as the API shows it: `held` (with its hold) while held; a resumed hold attached too. */
  async threadView(threadId: string): Promise<ThreadRecord> {
    const record = await this.thread(threadId);
    if (!record) throw Errors.THREAD_NOT_FOUND(threadId);
    return this.holds.view(record);
  }

  /**
   * Erases a thread's recorded text (issue 30): its payloads, recorded calls and events become
   * tombstones; usage and billing totals stay exact; who erased it and when is recorded. Refused
   * (409) while it runs (active, waiting or held).
   */
  async eraseThread(threadId: string, by: string): Promise<ThreadErasure> {
    const record = await this.threadView(threadId);
    if (record.status === 'active' || record.status === 'waiting' || record.status === 'held' || this.pump.liveThread(threadId)) throw Errors.THREAD_STILL_RUNNING(threadId, record.status);
    await this.storage.flush();
    const erasure = await this.storage.eraser.erase(threadId, by, Date.now());
    // The memory store's record (the durable stores' erasure changed their row in its transaction).
    if (record.error !== null) this.storage.threads.put({ ...withoutHold(record), error: ERASED });
    this.bus.emit({ type: 'thread_erased', threadId, erasure });
    this.logger.info({ threadId, by, erasure }, `thread ${threadId} erased`);
    return erasure;
  }

  /** The held threads' records (held status, hold attached), newest activity first. */
  async heldThreads(): Promise<ThreadRecord[]> {
    const held = await this.holds.held();
    const records = await this.storage.threads.getMany(held.map((h) => h.threadId));
    const out: ThreadRecord[] = [];
    for (const h of held) {
      const live = this.pump.liveThread(h.threadId);
      const record = live ?? records.get(h.threadId);
      if (record && (record.status === 'active' || record.status === 'waiting')) out.push({ ...record, status: 'held', hold: h });
    }
    return out.sort((a, b) => b.lastActivity - a.lastActivity);
  }

  /** The thread's erasure (null: never erased). */
  erasureOf(threadId: string): Promise<ThreadErasure | null> {
    return this.storage.eraser.erasureOf(threadId);
  }

  /**
   * Joins the other processes of a clustered organism (before `start`): this process's events go
   * to them and theirs come onto this bus (for listeners that ask for relayed events); pauses,
   * kills and reloads made anywhere apply here. `reloadConfig` re-reads this process's own
   * organism.yaml when another process announces a reload.
   */
  joinCluster(link: ClusterLink, options: { reloadConfig?: () => Promise<LoadedOrganism> } = {}): void {
    this.follower.join(link, options);
  }

  /** The configuration this process runs, as the processes of a clustered organism compare it. */
  get configIdentity() {
    return fingerprint(this.loaded.config);
  }

  /**
   * After a reload here: stores the configuration now running and tells the other processes,
   * which reload too when their own organism.yaml is the same. Nothing to do alone.
   */
  async shareReload(): Promise<void> {
    await this.follower.publishConfig(this.configIdentity);
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
    await this.budgetKeeper.save();
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
    const updatedFields: Record<string, string[]> = {};
    for (const l of next.listeners) {
      const r = current.get(l.config.name);
      if (!r || (r.handlerVersion === l.handlerVersion && JSON.stringify(r.config) === JSON.stringify(l.config))) continue;
      updatedFields[l.config.name] = listenerFieldChanges(r.config, l.config, r.handlerVersion !== l.handlerVersion);
    }
    return { success: true, added, removed, updated: Object.keys(updatedFields), updatedFields, ...configChanges(this.config, next.config), error: null };
  }

  /**
   * Applies an already validated configuration: listeners, payload types, limits, providers and
   * pricing (a new router), and the thread budget ceiling (`max_tokens_per_thread`: new threads
   * and live ones at the previous default, see applyDefaultCeiling). Keys read
   * only at start (journal, metrics, telemetry) are reported in `restartRequired`.
   */
  reload(next: LoadedOrganism): ReloadResult {
    const changes = configChanges(this.config, next.config);
    const { updatedFields } = this.planReload(next); // read before the pump takes the new listeners
    const running = withA2aPush(next);
    const registry = new PayloadRegistry(running.payloadTypes);
    const router = this.makeRouter(next.config);
    const listeners = this.pump.reload(running.listeners, limitsOf(next.config), { registry, llm: router });
    this.applyDefaultCeiling(next.config.maxTokensPerThread);
    this.mcp.reload(next, this.loaded);
    this.reapplyPauses(); // a listener removed and added back is still the one the operator paused
    this.loaded = next;
    this.registryValue = registry;
    this.router = router;
    const result: ReloadResult = { success: true, ...listeners, updatedFields: pick(updatedFields, listeners.updated), ...changes, error: null };
    this.bus.emit({ type: 'reload', result });
    this.logger.info({ added: result.added, removed: result.removed, updated: result.updated, changed: result.changed, restartRequired: result.restartRequired }, 'configuration reloaded');
    return result;
  }

  /**
   * A reloaded `max_tokens_per_thread`: new threads and the live budgets at the previous
   * default take it (spend kept). The embedded ledger applies it before this returns; a shared
   * one in one statement shortly after (a failure is logged: the running threads keep their
   * ceilings, new ones get the new default all the same).
   */
  private applyDefaultCeiling(maxTokens: number): void {
    const before = this.budgets.defaultMaxTokens;
    if (before === maxTokens) return;
    this.budgets.changeDefault(maxTokens).then(
      (threads) => {
        this.logger.info({ before, after: maxTokens, threads }, 'max_tokens_per_thread reloaded: live threads at the previous default take the new ceiling');
        if (threads > 0) void this.budgetKeeper.save();
      },
      (err: unknown) => this.logger.error({ err, before, after: maxTokens }, 'applying the reloaded max_tokens_per_thread to live threads failed; new threads get it'),
    );
  }

  /** Stops the pump (draining in-flight work), then flushes and closes storage. */
  async stop(options?: StopOptions): Promise<StopReport & { journal: JournalStats | null }> {
    this.follower.stop();
    this.inbox.stop();
    // No tick after this; the organism reads `stopping` at once (a tick already injecting is
    // refused and recorded failed, as docs/interop.md says).
    const scheduler = this.scheduler.stop();
    const report = await this.pump.stop(options);
    await scheduler;
    await this.webhooks.stop();
    await this.follower.close();
    await this.mcp.close();
    await this.budgetKeeper.stop();
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
    return this.pump.listeners().map((r) => listenerInfo(r, this.pump.queueDepth(r.name), this.elsewhere.of(r.name)));
  }

  agent(name: string): AgentInfo {
    const runtime = this.pump.listener(name);
    if (!runtime) throw Errors.AGENT_NOT_FOUND(name);
    return listenerInfo(runtime, this.pump.queueDepth(name), this.elsewhere.of(name));
  }

  /**
   * The agents as the whole organism runs them now: queue depth and in flight from the queue
   * (a cluster's sums them over every process: this process's memory holds only its share).
   */
  liveAgents(): AgentInfo[] | Promise<AgentInfo[]> {
    const load = this.storage.queue.load();
    // At once when the queue knows its load at once (embedded); else once the store answers.
    return load instanceof Promise ? load.then((l) => this.withLoads(l)) : this.withLoads(load);
  }

  private withLoads(load: ReadonlyMap<string, AgentLoad>): AgentInfo[] {
    return this.agents().map((a) => withLoad(a, load.get(a.name)));
  }

  async liveAgent(name: string): Promise<AgentInfo> {
    const info = this.agent(name);
    return withLoad(info, (await this.storage.queue.load()).get(name));
  }

  /** Threads with work queued or in flight, over the whole organism. */
  activeThreadTotal(): Promise<number> {
    return this.storage.queue.activeThreads();
  }

  /** The processes of the organism, live ones first (embedded: this one alone). */
  workers(): Promise<ProcessList> {
    return this.storage.queue.workers(this.thisProcess());
  }

  /**
   * Starts telling live views (`worker` events) when a process of the organism comes, stops or
   * is lost; returns the stop. The control service starts it: a worker serves no live view.
   */
  watchWorkers(): () => void {
    const watch = new WorkerWatch(
      () => this.workers(),
      (event) => this.bus.emit(event),
      this.logger,
    );
    watch.start();
    return () => watch.stop();
  }

  /** This process as it describes itself: embedded, the whole organism (no lease: nobody else can take its work). */
  private thisProcess(): WorkerRecord {
    const now = Date.now();
    const status = this.pump.organismStatus;
    return {
      id: this.bootId,
      kind: 'serve',
      name: `${hostname()}:${process.pid}`,
      host: hostname(),
      pid: process.pid,
      handlers: true,
      configHash: this.configIdentity.hash,
      startedAt: this.started ?? now,
      heartbeatAt: now,
      stoppedAt: status === 'stopped' ? now : null,
      alive: status !== 'stopped',
      concurrency: null,
      inFlight: this.pump.inFlightCount,
      leaseMs: null,
    };
  }

  /** A thread's record as it stands (the queue knows whether the live view or the store's is the newer). */
  thread(id: string): Promise<ThreadRecord | null> {
    return this.storage.queue.thread(id, this.pump.liveThread(id));
  }

  flush(): void {
    this.pump.flushThreads();
    void this.budgetKeeper.save();
  }

  /** Pauses the persisted paused listeners that exist; returns their names. */
  private reapplyPauses(): string[] {
    const paused: string[] = [];
    for (const name of this.operator.pausedAgents()) {
      const runtime = this.pump.listener(name);
      if (!runtime) continue; // not in this configuration; paused again if it comes back
      if (!runtime.paused) this.pump.pauseListener(name);
      paused.push(name);
    }
    return paused;
  }

  private makeRouter(config: OrganismConfig): LlmRouter {
    const deps: RouterDeps = {
      pricing: new Pricing(config.llm.pricing),
      tracker: this.tracker,
      budgets: this.budgets,
      recorder: new CallRecorder(this.llmCalls, config.llm.record ?? 'full'),
      observer: this.observers.llm,
      maxReplyBytes: config.llm.maxReplyBytes,
      outputCap: this.outputCap,
      redactor: this.redactor,
      replay: this.forkReplay,
    };
    return this.providerOverride ? new LlmRouter({ ...deps, providers: this.providerOverride }) : LlmRouter.fromConfig(config.llm, deps);
  }

  /**
   * privacy.redact, as the loaded config says: applied to every LLM call and tool run recorded,
   * to live deltas, WebSocket events, span attributes and log lines.
   */
  get redactor(): Redactor {
    if (this.redactorFor !== this.loaded) {
      this.redactorFor = this.loaded;
      this.redactorValue = privacyRedactor(this.loaded.config.privacy, this.loaded.redactFunctions ?? []);
      // Log lines are written by the process's loggers (createLogger): one organism per process sets it.
      if (this.redactorValue.active) setLogRedactor((line) => this.redactorValue.text(line));
      else if (this.redactsLogs) setLogRedactor(null);
      this.redactsLogs = this.redactorValue.active;
    }
    return this.redactorValue;
  }

  /**
   * A fork's tool call answered from the source's record (listener `replay: recorded`, its LLM
   * call replayed, the same tool and arguments recorded in full), recorded as `replayed`; null:
   * it runs.
   */
  private async recordedTool(
    call: { llmCallId: string; threadId: string; messageId: string; agent: string; arguments: Record<string, unknown> },
    target: { kind: 'mcp' | 'code'; server: string; tool: string },
  ): Promise<{ text: string; isError: boolean } | null> {
    const recorded = await this.forkReplay.recordedTool({ llmCallId: call.llmCallId, ...target, arguments: call.arguments });
    if (!recorded) return null;
    const { llmCallId, threadId, messageId, agent, arguments: args } = call;
    new CallRecorder(this.llmCalls, this.config.llm.record ?? 'full').tool({
      id: newId(),
      llmCallId,
      threadId,
      messageId,
      agent,
      ...target,
      arguments: args,
      result: recorded.result,
      isError: recorded.isError,
      error: recorded.error,
      startedAt: Date.now(),
      durationMs: 0,
      replayed: true,
    });
    return { text: recorded.result ?? recorded.error ?? '', isError: recorded.isError };
  }

  /** What an LLM agent may know: its peers (looked up by name) and the payload types. */
  private peerView(): AgentWorldView {
    return this.worldOf(this.loaded, this.registryValue, (name) => this.pump.listener(name)?.config ?? null);
  }

  /** An agent's view of an organism.yaml (the running one, or a fork's): `listener` looks a listener up by name. */
  private worldOf(loaded: LoadedOrganism, registry: PayloadRegistry, listener: (name: string) => ListenerConfig | null): AgentWorldView {
    const replays = (agent: string) => listener(agent)?.replay === 'recorded';
    return {
      registry,
      replyLimits: { maxReplyBytes: loaded.config.llm.maxReplyBytes, maxMessagesPerReply: loaded.config.llm.maxMessagesPerReply },
      listener: (name: string) => {
        const config = listener(name);
        return config ? { name, description: config.description, payloadTypes: acceptedTypes(config) } : null;
      },
      replyFormat: (l) => replyFormatOf(l, loaded.config),
      mcpTools: (servers): Promise<McpTool[]> => this.mcp.tools(servers),
      callMcp: async (call) => (replays(call.agent) ? await this.recordedTool(call, { kind: 'mcp', server: call.tool.server, tool: call.tool.name }) : null) ?? this.mcp.call(call),
      codeTools: (agent) => loaded.listeners.find((l) => l.config.name === agent)?.tools ?? [],
      callCode: async (call) => (replays(call.agent) ? await this.recordedTool(call, { kind: 'code', server: call.tool.module, tool: call.tool.name }) : null) ?? this.codeTools.call(call),
      approval: async (messageId) => (await this.storage.journal.get(messageId))?.approval ?? null,
    };
  }
}

/** The guardrails of a listener's LLM calls: the organism's, then its own. */
function guardsIn(loaded: LoadedOrganism, name: string): readonly Guard[] {
  const own = loaded.listeners.find((l) => l.config.name === name)?.guards ?? [];
  const all = loaded.guards ?? [];
  return all.length === 0 ? own : own.length === 0 ? all : [...all, ...own];
}

const answeredByPeople: Handler = () => {
  throw new Error('a builtin:human listener is answered by people, through the inbox');
};

function limitsOf(config: OrganismConfig): PumpLimits {
  return {
    maxConcurrentHandlers: config.maxConcurrentHandlers,
    maxConcurrentPerAgent: config.maxConcurrentPerAgent,
    maxHops: config.maxHops,
    maxQueue: config.maxQueue,
  };
}

function memoryStorage(): StorageParts {
  const journal = new MemoryJournal();
  return {
    journal,
    threads: new MemoryThreadStore(undefined, (search) => journal.threadsMatching(search)),
    usage: new MemoryUsageStore(),
    close() {},
  };
}

/** The entries of `fields` for the listeners the pump actually updated. */
function pick(fields: Readonly<Record<string, readonly string[]>>, names: readonly string[]): Record<string, readonly string[]> {
  return Object.fromEntries(names.map((n) => [n, fields[n] ?? []]));
}

function withoutHold(record: ThreadRecord): ThreadRecord {
  const { hold: _hold, ...rest } = record;
  return rest;
}
