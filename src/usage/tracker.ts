import type { UsageEvent, UsageSubscriber } from './types.js';

/** Running token, cost and request counters. */
export interface UsageCounters {
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  requestCount: number;
  /** Sum over priced calls only. */
  totalCost: number;
  /** Calls whose model has no price (their cost is unknown, not 0). */
  unpricedRequests: number;
}

/** The organism's usage totals since start. */
export interface UsageTotals extends UsageCounters {
  avgLatencyMs: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

/** Usage counters of one agent. */
export interface AgentUsage extends UsageCounters {
  readonly agentId: string;
}
/** Usage counters of one model. */
export interface ModelUsage extends UsageCounters {
  readonly model: string;
}

/** Empty counters. */
export const zeroCounters = (): UsageCounters => ({
  totalTokens: 0,
  promptTokens: 0,
  completionTokens: 0,
  requestCount: 0,
  totalCost: 0,
  unpricedRequests: 0,
});

/** Adds one event to counters (unpriced events count apart, never as cost 0). */
export function addUsage(c: UsageCounters, e: UsageEvent): void {
  c.totalTokens += e.totalTokens;
  c.promptTokens += e.promptTokens;
  c.completionTokens += e.completionTokens;
  c.requestCount += 1;
  if (e.cost === null) c.unpricedRequests += 1;
  else c.totalCost += e.cost;
}

/**
 * Live usage aggregates (totals, per agent, per model) and the fan-out of every event to
 * subscribers (the persisted store subscribes at start). O(1) per event, and bounded by the
 * configuration: nothing is kept per thread, whose usage the usage store answers (a live map
 * per thread, never read, grew by about 190 bytes for every thread the process ever ran).
 */
export class UsageTracker {
  private totalsValue = { ...zeroCounters(), latencySum: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  private agents = new Map<string, UsageCounters>();
  private models = new Map<string, UsageCounters>();
  private readonly subscribers = new Set<UsageSubscriber>();

  constructor(private readonly onSubscriberError: (err: unknown) => void = () => {}) {}

  record(event: UsageEvent): void {
    const t = this.totalsValue;
    addUsage(t, event);
    t.latencySum += event.totalLatencyMs;
    t.cacheReadTokens += event.cacheReadTokens ?? 0;
    t.cacheWriteTokens += event.cacheWriteTokens ?? 0;
    t.reasoningTokens += event.reasoningTokens ?? 0;
    addUsage(bucket(this.agents, event.agentId), event);
    addUsage(bucket(this.models, event.model), event);
    for (const fn of this.subscribers) {
      try {
        fn(event);
      } catch (err) {
        try {
          this.onSubscriberError(err);
        } catch {
          // nothing more to do
        }
      }
    }
  }

  subscribe(fn: UsageSubscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  totals(): UsageTotals {
    const { latencySum, ...t } = this.totalsValue;
    return { ...t, avgLatencyMs: t.requestCount === 0 ? 0 : latencySum / t.requestCount };
  }

  byAgent(): AgentUsage[] {
    return [...this.agents].map(([agentId, c]) => ({ agentId, ...c }));
  }

  agent(agentId: string): AgentUsage {
    return { agentId, ...(this.agents.get(agentId) ?? zeroCounters()) };
  }

  byModel(): ModelUsage[] {
    return [...this.models].map(([model, c]) => ({ model, ...c }));
  }

  model(model: string): ModelUsage {
    return { model, ...(this.models.get(model) ?? zeroCounters()) };
  }

  /** Clears the live aggregates only: subscribers (e.g. the persisted store) keep receiving. */
  reset(): void {
    this.totalsValue = { ...zeroCounters(), latencySum: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    this.agents = new Map();
    this.models = new Map();
  }
}

function bucket(map: Map<string, UsageCounters>, key: string): UsageCounters {
  let c = map.get(key);
  if (!c) map.set(key, (c = zeroCounters()));
  return c;
}
