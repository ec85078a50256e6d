import type { ListenerConfig, ResolvedListener } from '../config/types.js';
import type { EventBus } from '../events/bus.js';
import type { AgentState, OrganismStatus } from '../events/types.js';
import type { LlmRouter } from '../llm/router.js';
import type { PayloadRegistry } from '../payload/index.js';
import type { Journal } from '../core/journal.js';
import type { ThreadStore } from '../core/thread.js';
import type { BudgetLedger } from '../core/budget.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { UsageEvent } from '../usage/types.js';
import type { Logger } from '../util/logger.js';
import type { Handler } from '../core/handler.js';
import { ListenerRuntime } from './listener-runtime.js';
import type { Message } from '../core/message.js';
import type { DeliveryObservers, DeliveryOutcome, DeliveryWatch } from './observer.js';
import { ThreadTracker, type LiveThread } from './thread-tracker.js';
import { recordsKeptByStore, type WorkSource } from '../core/work-source.js';

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
  readonly bus: EventBus;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetLedger;
  readonly llm: LlmRouter;
  readonly logger: Logger;
  /** Builds the handler of a `builtin:llm` listener. */
  readonly llmHandler: (listener: ListenerConfig) => Handler;
  readonly now?: () => number;
  /** Telemetry watching deliveries (metrics, traces). */
  readonly observers?: DeliveryObservers;
  /** Shared mode: the store is the work queue of several processes (see work-source.ts); absent: embedded. */
  readonly work?: WorkSource;
}

/** One message being delivered: from the start of its handler until its outcome is journaled. */
export interface Delivery {
  readonly message: Message;
  readonly runtime: ListenerRuntime;
  readonly thread: LiveThread;
  readonly controller: AbortController;
  readonly usage: UsageEvent[];
  /** The handler has returned (or was cut short): its concurrency slot is free again. */
  handlerDone: boolean;
  readonly watch: DeliveryWatch | null;
  /** How it ended, for the watch (unset: cut short by shutdown, it stays DISPATCHED). */
  outcome: DeliveryOutcome | null;
}

/** Abort reasons the pump gives, so a delivery knows why it was cut short. */
export type AbortCause = 'killed' | 'timeout' | 'shutdown';

/**
 * What every part of the pump shares: its dependencies and limits, the registered listeners,
 * the live threads, the counters the limits are checked against, and the organism's status.
 * The pump is built in layers, each adding one job on top of this (see pump.ts).
 */
export abstract class PumpState {
  protected readonly runtimes = new Map<string, ListenerRuntime>();
  /** Round-robin order of the listeners; rebuilt when they change. */
  protected runtimeList: ListenerRuntime[] | null = null;
  protected readonly threads: ThreadTracker;
  protected readonly now: () => number;
  protected readonly unsubscribes: Array<() => void> = [];
  protected status: OrganismStatus = 'starting';
  protected dispatching = true;
  protected queued = 0;
  protected inFlight = 0;
  /**
   * Deliveries whose handler runs: the concurrency limits count these. A delivery whose handler
   * returned holds no slot while its ack commits (in flight until then, for stop and drain),
   * so the limits bound handler work, not the journal's commit latency.
   */
  protected running = 0;
  protected totalMessages = 0;

  constructor(
    protected deps: PumpDeps,
    protected limits: PumpLimits,
  ) {
    this.now = deps.now ?? Date.now;
    // Shared mode: thread records are kept by the store in the journal's transactions; one
    // process's memory of a thread would overwrite what another process's outcome decided.
    this.threads = new ThreadTracker(deps.work ? recordsKeptByStore(deps.threads) : deps.threads, deps.bus);
  }

  protected register(l: ResolvedListener): void {
    this.runtimeList = null;
    this.runtimes.set(l.config.name, new ListenerRuntime(l.config, this.handlerFor(l), l.handlerVersion));
  }

  protected handlerFor(l: ResolvedListener): Handler {
    return l.handler ?? this.deps.llmHandler(l.config);
  }

  protected reportState(runtime: ListenerRuntime): void {
    const state: AgentState = runtime.state;
    if (state === runtime.reportedState) return;
    runtime.reportedState = state;
    this.deps.bus.emit({ type: 'agent_state', agent: runtime.name, state, currentThread: runtime.currentThread });
  }
}
