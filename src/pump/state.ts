import type { Redactor } from '../util/pii.js';
import type { Guard } from '../core/guard.js';
import type { ListenerConfig, ResolvedListener } from '../config/types.js';
import type { BudgetLedger } from '../core/budget.js';
import type { Handler } from '../core/handler.js';
import type { Message } from '../core/message.js';
import type { DeliveryQueue } from '../core/queue.js';
import type { Journal } from '../core/journal.js';
import type { ThreadStore } from '../core/thread.js';
import type { UsageEvent } from '../usage/types.js';
import type { EventBus } from '../events/bus.js';
import type { AgentState, OrganismStatus } from '../events/types.js';
import type { LlmRouter } from '../llm/router.js';
import type { PayloadRegistry } from '../payload/index.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { Logger } from '../util/logger.js';
import type { Cancellation } from './cancellation.js';
import { ListenerRuntime } from './listener-runtime.js';
import type { DeliveryObservers, DeliveryOutcome, DeliveryWatch } from './observer.js';
import { ThreadTracker, type LiveThread } from './thread-tracker.js';
import type { ListenerSetup, ListenerSetups, ListenerView } from './setup.js';

export interface PumpLimits {
  readonly maxConcurrentHandlers: number;
  readonly maxConcurrentPerAgent: number;
  readonly maxHops: number;
  readonly maxQueue: number;
}

export interface PumpDeps {
  readonly registry: PayloadRegistry;
  readonly journal: Journal;
  readonly threads: ThreadStore;
  /** Where journaled messages wait and outcomes are written (embedded or cluster: the pump does not ask). */
  readonly queue: DeliveryQueue;
  readonly bus: EventBus;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetLedger;
  readonly llm: LlmRouter;
  readonly logger: Logger;
  /** Builds the handler of a `builtin:llm` listener. */
  readonly llmHandler: (listener: ListenerConfig) => Handler;
  /** The guardrails of a listener's LLM calls (organism-wide, then its own); absent: none. */
  readonly guards?: (listener: string) => readonly Guard[];
  /** privacy.redact_payloads: what every new message's payload is redacted with before it is journaled; absent or null: kept as given. */
  readonly payloadRedactor?: () => Redactor | null;
  readonly now?: () => number;
  /** Telemetry watching deliveries (metrics, traces). */
  readonly observers?: DeliveryObservers;
  /**
   * The loop breaker (issue 30): sees each delivery's outgoing messages and usage before its ack
   * commits, and may hold the thread (its outgoing messages then wait PENDING). It never fails
   * a delivery: what it throws is logged.
   */
  readonly loopGuard?: LoopWatch;
  /** Threads that run under another organism.yaml (a fork's `configPath`); absent: every thread runs under the running one. */
  readonly setups?: ListenerSetups;
}

export interface LoopWatch {
  /** `threadMessages`: the thread's message count as this process knows it (what it may skip reading the journal on). */
  check(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[], threadMessages: number): Promise<void>;
}

/** One message being delivered: from the start of its handler until its outcome is journaled. */
export interface Delivery {
  readonly message: Message;
  /** The listener's counters and limits (the running organism's). */
  readonly runtime: ListenerRuntime;
  /** Its configuration and handler: the runtime's, or those of the organism.yaml its thread runs under (setup). */
  listener: ListenerView;
  /** The other organism.yaml its thread runs under (a fork's configPath); null: the running one. */
  setup: ListenerSetup | null;
  readonly thread: LiveThread;
  /** Cuts the delivery short (a kill, its timeout, a shutdown); its AbortSignal is made only if read. */
  readonly cancellation: Cancellation;
  readonly usage: UsageEvent[];
  /** The handler has returned (or was cut short): its concurrency slot is free again. */
  handlerDone: boolean;
  readonly watch: DeliveryWatch | null;
  /** How it ended, for the watch (unset: cut short by shutdown, it stays DISPATCHED). */
  outcome: DeliveryOutcome | null;
}

const answeredByPeople: Handler = () => {
  throw new Error('a builtin:human listener is answered by people, through the inbox');
};

/**
 * What every part of the pump reads and changes: its dependencies and limits, the registered
 * listeners, the live threads and deliveries, the counters the limits are checked against, and
 * the organism's status. Data, and the one report every part makes (a listener's state).
 */
export class PumpState {
  deps: PumpDeps;
  limits: PumpLimits;
  readonly now: () => number;
  readonly listeners = new Map<string, ListenerRuntime>();
  /** The listeners in the order deliveries rotate over them; rebuilt when they change. */
  private listenerList: ListenerRuntime[] | null = null;
  readonly threads: ThreadTracker;
  readonly deliveries = new Map<string, Delivery>();
  readonly unsubscribes: Array<() => void> = [];
  status: OrganismStatus = 'starting';
  dispatching = true;
  /** Messages waiting in this process (and injects reserving their place while they are journaled). */
  queued = 0;
  inFlight = 0;
  /**
   * Deliveries whose handler runs: the concurrency limits count these. A delivery whose handler
   * returned holds no slot while its ack commits (in flight until then, for stop and drain),
   * so the limits bound handler work, not the journal's commit latency.
   */
  running = 0;
  totalMessages = 0;
  /**
   * Open asks (AWAITING entries) per thread, as this process knows them (embedded: all of them,
   * loaded at start): a thread that settles with one open is `waiting`, not finished.
   */
  readonly asks = new Map<string, Set<string>>();

  constructor(deps: PumpDeps, limits: PumpLimits) {
    this.deps = deps;
    this.limits = limits;
    this.now = deps.now ?? Date.now;
    this.threads = new ThreadTracker(deps.queue.threadRecords, deps.bus);
  }

  register(l: ResolvedListener): void {
    this.listenerList = null;
    this.listeners.set(l.config.name, new ListenerRuntime(l.config, this.handlerFor(l), l.handlerVersion));
  }

  unregister(name: string): void {
    this.listenerList = null;
    this.listeners.delete(name);
  }

  listenerOrder(): ListenerRuntime[] {
    return (this.listenerList ??= [...this.listeners.values()]);
  }

  handlerFor(l: ResolvedListener): Handler {
    // A human listener's deliveries never run a handler: they park as asks (Deliveries.park).
    if (l.config.human) return answeredByPeople;
    return l.handler ?? this.deps.llmHandler(l.config);
  }

  setStatus(status: OrganismStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.deps.bus.emit({ type: 'organism_status', status });
  }

  /** Tells the bus a listener's state, when it changed. */
  reportState(runtime: ListenerRuntime): void {
    const state: AgentState = runtime.state;
    if (state === runtime.reportedState) return;
    runtime.reportedState = state;
    this.deps.bus.emit({ type: 'agent_state', agent: runtime.name, state, currentThread: runtime.currentThread });
  }
}
