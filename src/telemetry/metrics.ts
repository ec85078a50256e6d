import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { OrganismEvent } from '../events/types.js';
import { errorTypeOf, type LlmCallInfo, type LlmCallWatch } from '../llm/observer.js';
import type { CompletionResult } from '../llm/types.js';
import type { Organism } from '../organism/organism.js';
import type { DeliveryOutcome, DeliveryWatch } from '../pump/observer.js';
import { EXTERNAL_SENDER } from '../core/message.js';
import { DELIVERY_STATES, type DeliveryState, type KeptJournalStats } from '../core/journal.js';
import type { ThreadStatus } from '../core/thread.js';
import { GEN_AI_OPERATION_CHAT, GenAiTokenType } from './conventions.js';

/** How often the event-loop delay histogram samples (see the constructor). */
export const EVENT_LOOP_SAMPLE_MS = 1_000;

/** Label value for a name that is not a configured listener (keeps label sets bounded). */
export const OTHER_LISTENER = '_other';

/** OpenTelemetry's recommended buckets for gen_ai.client.token.usage and .operation.duration. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const GEN_AI_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const DELIVERY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const JOURNAL_STATES: readonly DeliveryState[] = DELIVERY_STATES;

/**
 * The organism's Prometheus metrics (prom-client). Values come from counters the runtime keeps
 * (read when scraped) and from cheap increments on bus events and delivery/LLM observers; no
 * label carries a thread id, message id, payload or token. The service adds its own families
 * (HTTP, WebSocket) to `registry`.
 */
export class OrganismMetrics {
  readonly registry = new Registry();
  private readonly detachers: Array<() => void> = [];
  /** Threads seen active and not yet ended (to count each status change once). */
  private readonly liveThreads = new Set<string>();
  private recoveryCounted: string | null = null;
  /** Deliveries ended per listener and thread status changes since the last scrape: added to their counters when collected. */
  private readonly ended = new Map<string, EndedDeliveries>();
  private readonly statusChanges = new Map<ThreadStatus, number>();

  private readonly deliveries: Counter<'listener' | 'outcome'>;
  private readonly failures: Counter<'listener' | 'reason'>;
  private readonly deliveryDuration: Histogram<'listener'>;
  private readonly recovered: Counter<'kind'>;
  private readonly peerDenials: Counter<'listener'>;
  private readonly budgetWarnings: Counter<'threshold'>;
  private readonly loopDetections: Counter<'rule'>;
  private readonly threadHolds: Counter<'rule'>;
  private readonly budgetExhaustions: Counter;
  private readonly tokenUsage: Histogram<'gen_ai_token_type' | 'gen_ai_request_model' | 'gen_ai_provider_name' | 'gen_ai_agent_name'>;
  private readonly operationDuration: Histogram<'gen_ai_operation_name' | 'gen_ai_request_model' | 'gen_ai_provider_name' | 'gen_ai_agent_name' | 'error_type'>;
  private readonly cost: Counter<'agent' | 'model'>;
  private readonly unpriced: Counter<'model'>;
  private readonly retries: Counter<'provider' | 'reason'>;
  private readonly overOutputCap: Counter<'provider'>;

  constructor(private readonly organism: Organism) {
    const registers = [this.registry];
    const self = this;
    // The event-loop delay histogram (nodejs_eventloop_lag_p99_seconds and kin) samples on a
    // timer: prom-client's 10 ms wakes an idle server 100 times a second (~0.6 % of a core,
    // most of what an idle serve spent). Once a second costs nothing measurable; a stall still
    // shows when the sample falls in it, and nodejs_eventloop_lag_seconds is measured at scrape.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    // Gauges named like counters (promtool rejects them); nodejs_active_*{type} say the same per type.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
      this.registry.removeSingleMetric(name);
    }

    // Counted in plain fields per delivery (no label hashing on the delivery path), added here when scraped.
    this.deliveries = new Counter({
      name: 'organism_deliveries_total',
      help: 'Deliveries that ended, by listener and outcome (acked, failed).',
      labelNames: ['listener', 'outcome'],
      registers,
      collect() {
        for (const e of self.ended.values()) {
          if (e.acked > 0) this.inc({ listener: e.listener, outcome: 'acked' }, e.acked);
          if (e.failed > 0) this.inc({ listener: e.listener, outcome: 'failed' }, e.failed);
          e.acked = e.failed = 0;
        }
      },
    });
    this.failures = new Counter({
      name: 'organism_delivery_failures_total',
      help: "Messages that ended FAILED in the journal, by recipient and the journal's failure reason.",
      labelNames: ['listener', 'reason'],
      registers,
    });
    this.deliveryDuration = new Histogram({
      name: 'organism_delivery_duration_seconds',
      help: 'Time from handler start to the delivery being acked or failed in the journal.',
      labelNames: ['listener'],
      buckets: DELIVERY_BUCKETS,
      registers,
    });
    const listenerGauge = (name: string, help: string, value: (a: ReturnType<Organism['agents']>[number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['listener'],
        registers,
        collect() {
          this.reset();
          for (const a of organism.agents()) this.set({ listener: a.name }, value(a));
        },
      });
    listenerGauge('organism_queue_depth', 'Messages queued for the listener.', (a) => a.queueDepth);
    listenerGauge('organism_in_flight', 'Deliveries to the listener in progress.', (a) => a.inFlight);
    listenerGauge('organism_listener_paused', '1 when an operator paused the listener, else 0.', (a) => (a.state === 'paused' ? 1 : 0));

    // Read together at scrape time from the journal's kept counts (no scan).
    // A closed store (the organism stopped while the server drains) leaves these out, never fails the scrape.
    let kept: Promise<KeptJournalStats | null> | null = null;
    const keptStats = () =>
      (kept ??= organism.queries.journal
        .keptStats()
        .catch(() => null)
        .finally(() => setImmediate(() => (kept = null))));
    new Gauge({
      name: 'organism_journal_entries',
      help: 'Journal entries by delivery state (PENDING, DISPATCHED, AWAITING, ACKED, FAILED).',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        const stats = await keptStats();
        if (stats) for (const state of JOURNAL_STATES) this.set({ state }, stats.counts[state]);
      },
    });
    new Gauge({
      name: 'organism_journal_oldest_pending_age_seconds',
      help: 'Age of the oldest PENDING journal entry (0 when none).',
      registers,
      async collect() {
        this.reset();
        const stats = await keptStats();
        if (stats) this.set((stats.oldestPendingAgeMs ?? 0) / 1000);
      },
    });
    this.recovered = new Counter({
      name: 'organism_recovered_messages_total',
      help: 'Journal entries recovered at start: pending (sent again), redelivered (interrupted, attempt + 1), failed (past max attempts).',
      labelNames: ['kind'],
      registers,
      collect() {
        self.countRecovery();
      },
    });
    new Gauge({
      name: 'organism_threads_active',
      help: 'Threads with work queued or in flight.',
      registers,
      collect() {
        this.set(organism.activeThreads);
      },
    });
    new Counter({
      name: 'organism_threads_total',
      help: 'Threads that reached each status: active (started or resumed), completed, error, killed.',
      labelNames: ['status'],
      registers,
      collect() {
        for (const [status, n] of self.statusChanges) if (n > 0) this.inc({ status }, n);
        self.statusChanges.clear();
      },
    });
    this.peerDenials = new Counter({
      name: 'organism_peer_denials_total',
      help: 'Messages refused because the sending listener may not address the target.',
      labelNames: ['listener'],
      registers,
    });
    this.loopDetections = new Counter({
      name: 'organism_loop_detections_total',
      help: 'Runaway threads the loop breaker (loop_guard) found and held, by rule (repeat, cycle, velocity).',
      labelNames: ['rule'],
      registers,
    });
    this.threadHolds = new Counter({
      name: 'organism_thread_holds_total',
      help: "Threads held, by rule (operator: an operator's pause; repeat, cycle, velocity: the loop breaker).",
      labelNames: ['rule'],
      registers,
    });
    this.budgetWarnings = new Counter({
      name: 'organism_budget_warnings_total',
      help: 'Thread budget warnings sent, by threshold (percent of the ceiling).',
      labelNames: ['threshold'],
      registers,
    });
    this.budgetExhaustions = new Counter({
      name: 'organism_budget_exhaustions_total',
      help: 'Deliveries failed because their thread budget was exhausted.',
      registers,
    });
    this.tokenUsage = new Histogram({
      name: 'gen_ai_client_token_usage',
      help: 'Tokens per LLM call (OpenTelemetry gen_ai.client.token.usage), by token type.',
      labelNames: ['gen_ai_token_type', 'gen_ai_request_model', 'gen_ai_provider_name', 'gen_ai_agent_name'],
      buckets: TOKEN_BUCKETS,
      registers,
    });
    this.operationDuration = new Histogram({
      name: 'gen_ai_client_operation_duration_seconds',
      help: 'Duration of LLM calls including retries (OpenTelemetry gen_ai.client.operation.duration); error_type on failures.',
      labelNames: ['gen_ai_operation_name', 'gen_ai_request_model', 'gen_ai_provider_name', 'gen_ai_agent_name', 'error_type'],
      buckets: GEN_AI_DURATION_BUCKETS,
      registers,
    });
    this.cost = new Counter({
      name: 'organism_llm_cost_usd_total',
      help: 'Cost of priced LLM calls in USD, by agent and requested model.',
      labelNames: ['agent', 'model'],
      registers,
    });
    this.unpriced = new Counter({
      name: 'organism_llm_unpriced_requests_total',
      help: 'LLM calls whose model has no price (their cost is unknown, never counted as 0).',
      labelNames: ['model'],
      registers,
    });
    this.retries = new Counter({
      name: 'organism_llm_retries_total',
      help: 'LLM requests retried after a retryable failure, by provider and reason (http_<status>, llm_timeout, llm_network).',
      labelNames: ['provider', 'reason'],
      registers,
    });

    this.overOutputCap = new Counter({
      name: 'organism_llm_output_over_cap_total',
      help: 'LLM calls whose provider reported more completion tokens than the call allowed (max_tokens); billed as reported.',
      labelNames: ['provider'],
      registers,
    });

    this.detachers.push(
      organism.bus.on((event) => this.onEvent(event)),
      organism.observers.deliveries.add({
        injected: () => null,
        started: (_message, listener) => new DeliveryTimer(this.endedFor(listener.name), this.deliveryDuration),
      }),
      organism.observers.llm.add({ started: (call) => this.llmCall(call) }),
    );
  }

  /** Stops listening (the registry keeps its last values). */
  detach(): void {
    for (const off of this.detachers.splice(0)) off();
  }

  /** The Prometheus text exposition. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** A configured listener's name as it is, any other name as OTHER_LISTENER. */
  private listenerLabel(name: string): string {
    return this.organism.hasListener(name) ? name : OTHER_LISTENER;
  }

  private onEvent(event: OrganismEvent): void {
    switch (event.type) {
      case 'journal_failed':
        if (event.message.to === EXTERNAL_SENDER) return;
        this.failures.inc({ listener: this.listenerLabel(event.message.to), reason: event.reason });
        if (event.reason === 'budget_exhausted') this.budgetExhaustions.inc();
        return;
      case 'peer_denied':
        this.peerDenials.inc({ listener: this.listenerLabel(event.from) });
        return;
      case 'budget_warning':
        this.budgetWarnings.inc({ threshold: String(event.threshold) });
        return;
      case 'loop_detected':
        this.loopDetections.inc({ rule: event.rule });
        return;
      case 'thread_held':
        this.threadHolds.inc({ rule: event.hold.rule });
        return;
      case 'thread_created':
      case 'thread_updated':
        this.threadStatus(event.thread.id, event.thread.status);
        return;
      default:
        return;
    }
  }

  /** Counts a thread's status once per change: active when it starts (or resumes), then how it ended. */
  private threadStatus(id: string, status: ThreadStatus): void {
    if (status === 'active') {
      if (this.liveThreads.has(id)) return;
      this.liveThreads.add(id);
    } else {
      this.liveThreads.delete(id);
    }
    this.statusChanges.set(status, (this.statusChanges.get(status) ?? 0) + 1);
  }

  private endedFor(listener: string): EndedDeliveries {
    let e = this.ended.get(listener);
    if (e === undefined) this.ended.set(listener, (e = { listener, acked: 0, failed: 0 }));
    return e;
  }

  private countRecovery(): void {
    const report = this.organism.lastRecovery;
    if (!report || this.recoveryCounted === report.bootId) return;
    this.recoveryCounted = report.bootId;
    this.recovered.inc({ kind: 'pending' }, report.pending);
    this.recovered.inc({ kind: 'redelivered' }, report.redelivered);
    this.recovered.inc({ kind: 'failed' }, report.failedMaxAttempts);
  }

  private llmCall(call: LlmCallInfo): LlmCallWatch {
    const started = performance.now();
    const base = { gen_ai_request_model: call.model, gen_ai_agent_name: call.agent };
    return {
      retried: (provider, reason) => this.retries.inc({ provider, reason }),
      succeeded: (result: CompletionResult) => {
        const labels = { ...base, gen_ai_provider_name: result.provider };
        this.operationDuration.observe({ ...labels, gen_ai_operation_name: GEN_AI_OPERATION_CHAT }, (performance.now() - started) / 1000);
        const u = result.usage;
        this.tokenUsage.observe({ ...labels, gen_ai_token_type: GenAiTokenType.INPUT }, u.promptTokens);
        this.tokenUsage.observe({ ...labels, gen_ai_token_type: GenAiTokenType.OUTPUT }, u.completionTokens);
        if (u.cacheReadTokens !== null) this.tokenUsage.observe({ ...labels, gen_ai_token_type: GenAiTokenType.CACHE_READ }, u.cacheReadTokens);
        if (u.cacheWriteTokens !== null) this.tokenUsage.observe({ ...labels, gen_ai_token_type: GenAiTokenType.CACHE_CREATION }, u.cacheWriteTokens);
        if (u.reasoningTokens !== null) this.tokenUsage.observe({ ...labels, gen_ai_token_type: GenAiTokenType.REASONING }, u.reasoningTokens);
        if (result.overOutputCap) this.overOutputCap.inc({ provider: result.provider });
        if (result.cost === null) this.unpriced.inc({ model: call.model });
        else this.cost.inc({ agent: call.agent, model: call.model }, result.cost);
      },
      failed: (error) => {
        this.operationDuration.observe({ ...base, gen_ai_operation_name: GEN_AI_OPERATION_CHAT, error_type: errorTypeOf(error) }, (performance.now() - started) / 1000);
      },
    };
  }
}

/** Deliveries of one listener that ended since the last scrape. */
interface EndedDeliveries {
  readonly listener: string;
  acked: number;
  failed: number;
}

/** Times one delivery for the delivery counters: a class, as one is made for every delivery. */
class DeliveryTimer implements DeliveryWatch {
  readonly traceContext = null;
  readonly logFields = null;
  private readonly started = performance.now();

  constructor(
    private readonly ended: EndedDeliveries,
    private readonly duration: Histogram<'listener'>,
  ) {}

  run<T>(fn: () => T): T {
    return fn();
  }

  end(outcome: DeliveryOutcome): void {
    if (!outcome.acked && outcome.reason === 'shutdown') return; // not ended: redelivered after restart
    if (outcome.acked) this.ended.acked++;
    else this.ended.failed++;
    this.duration.observe({ listener: this.ended.listener }, (performance.now() - this.started) / 1000);
  }
}
