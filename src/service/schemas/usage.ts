import { Type } from 'typebox';
import { Name, Nullable, SuccessFlag, Timestamp } from './common.js';

const Counts = {
  totalTokens: Type.Integer(),
  promptTokens: Type.Integer(),
  completionTokens: Type.Integer(),
  requestCount: Type.Integer(),
  totalCost: Type.Number({ description: 'USD; unpriced calls count 0 here and are reported in unpricedRequests' }),
};

const Unpriced = { unpricedRequests: Type.Integer({ description: 'Calls to models without a price' }) };

export const UsageTotals = Type.Object(
  {
    ...Counts,
    avgLatencyMs: Type.Number({ description: 'Mean wall time per call, retries included' }),
    ...Unpriced,
    cacheReadTokens: Type.Integer(),
    cacheWriteTokens: Type.Integer(),
    reasoningTokens: Type.Integer(),
  },
  { title: 'UsageTotals' },
);

export const UsageCounts = Type.Object({ ...Counts, ...Unpriced }, { title: 'UsageCounts' });

/** A thread's LLM usage from the usage store: it stays after the thread ends. */
export const ThreadUsage = Type.Object(
  { ...Counts, ...Unpriced, byModel: Type.Record(Type.String(), UsageCounts, { description: 'The same counters per model' }) },
  { title: 'ThreadUsage' },
);

export const AgentUsageInfo = Type.Object({ agentId: Type.String(), ...Counts, ...Unpriced }, { title: 'AgentUsageInfo' });
export const ModelUsageInfo = Type.Object({ model: Type.String(), ...Counts, ...Unpriced }, { title: 'ModelUsageInfo' });

export const UsageOverview = Type.Object(
  {
    totals: UsageTotals,
    byAgent: Type.Array(AgentUsageInfo),
    byModel: Type.Array(ModelUsageInfo),
    activeThreads: Type.Integer({ description: 'Threads whose budget is live: the thread has not finished (a finished thread keeps its budget, not counted here)' }),
  },
  { title: 'UsageOverview' },
);

export const UsageResponse = Type.Object({ usage: UsageOverview }, { title: 'UsageResponse' });

export const ThreadBudgetInfo = Type.Object(
  {
    threadId: Type.String(),
    maxTokens: Type.Integer(),
    promptTokens: Type.Integer(),
    completionTokens: Type.Integer(),
    totalTokens: Type.Integer(),
    reservedTokens: Type.Integer({ description: 'Held for LLM calls in flight' }),
    remaining: Type.Integer(),
    percentUsed: Type.Number({ description: 'totalTokens / maxTokens * 100, 1 decimal' }),
    isExhausted: Type.Boolean(),
    active: Type.Boolean({ description: 'false: the thread has finished; its budget is kept, and an inject into the thread goes on from it' }),
  },
  { title: 'ThreadBudgetInfo' },
);

export const BudgetState = Type.Enum(['live', 'finished', 'all']);

export const ThreadBudgetListQuery = Type.Object({
  state: Type.Optional(
    Type.Enum(['live', 'finished', 'all'], {
      default: 'live',
      description: 'live (default): threads that have not finished; finished: threads that have (their budgets are kept for a later inject); all',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'Page size (1..1000)' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Budgets to skip' })),
});

export const ThreadBudgetListResponse = Type.Object(
  {
    threads: Type.Array(ThreadBudgetInfo),
    count: Type.Integer({ description: 'Budgets in this page' }),
    total: Type.Integer({ description: 'Budgets in that state before paging' }),
    offset: Type.Integer(),
    limit: Type.Integer(),
    state: BudgetState,
    defaultMaxTokens: Type.Integer(),
  },
  { title: 'ThreadBudgetListResponse' },
);

export const ThreadBudgetParams = Type.Object({ threadId: Name });
export const AgentUsageParams = Type.Object({ agentId: Name });
export const ModelUsageParams = Type.Object({ model: Name });

export const SetBudgetRequest = Type.Object(
  {
    maxTokens: Type.Integer({
      minimum: 1,
      maximum: 1_000_000_000,
      description:
        'New ceiling of the thread: at least the tokens it has already used (422 otherwise); a thread not started yet (or without an LLM call yet) gets a budget with it, which its first inject runs under; a finished thread keeps it for its next inject',
    }),
  },
  { title: 'SetBudgetRequest' },
);

export const ResetResponse = Type.Object({ success: SuccessFlag, message: Type.Literal('Usage tracking reset') }, { title: 'ResetResponse' });

const TimeParam = (what: string) => Type.Optional(Type.String({ maxLength: 64, description: `${what} (ISO 8601, e.g. 2025-01-31T00:00:00Z)` }));

const RangeQuery = {
  startTime: TimeParam('Inclusive start'),
  endTime: TimeParam('Exclusive end'),
  orgId: Type.Optional(Type.String({ maxLength: 256 })),
};

export const UsageHistoryQuery = Type.Object({
  ...RangeQuery,
  agentId: Type.Optional(Type.String({ maxLength: 256 })),
  model: Type.Optional(Type.String({ maxLength: 256 })),
  threadId: Type.Optional(Type.String({ maxLength: 256, description: 'Events of this thread only' })),
  userId: Type.Optional(Type.String({ maxLength: 256, description: 'Events of messages injected with this metadata userId' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size (1..1000)' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});

export const BillingQuery = Type.Object({ ...RangeQuery });
export const DailyQuery = Type.Object({ ...RangeQuery });

export const UsageEventInfo = Type.Object(
  {
    id: Type.String(),
    timestamp: Timestamp,
    threadId: Type.String(),
    agentId: Type.String(),
    messageId: Nullable(Type.String()),
    model: Type.String(),
    provider: Type.String(),
    promptTokens: Type.Integer(),
    completionTokens: Type.Integer(),
    totalTokens: Type.Integer(),
    cacheReadTokens: Nullable(Type.Integer()),
    cacheWriteTokens: Nullable(Type.Integer()),
    reasoningTokens: Nullable(Type.Integer()),
    latencyMs: Type.Number({ description: 'Provider latency (same as providerLatencyMs)' }),
    providerLatencyMs: Type.Number(),
    totalLatencyMs: Type.Number({ description: 'Including retries and backoff' }),
    estimatedCost: Nullable(Type.Number()),
    metadata: Type.Object({}, { additionalProperties: Type.String() }),
  },
  { title: 'UsageEventInfo' },
);

export const UsageHistoryResponse = Type.Object(
  {
    events: Type.Array(UsageEventInfo),
    count: Type.Integer(),
    total: Type.Integer({ description: 'Matches of every filter before paging' }),
    offset: Type.Integer(),
    limit: Type.Integer(),
  },
  { title: 'UsageHistoryResponse' },
);

const BillingLine = Type.Object({ ...Counts, ...Unpriced });

export const BillingResponse = Type.Object(
  {
    orgId: Nullable(Type.String()),
    startTime: Nullable(Timestamp),
    endTime: Nullable(Timestamp),
    ...Counts,
    ...Unpriced,
    byModel: Type.Object({}, { additionalProperties: BillingLine }),
    byAgent: Type.Object({}, { additionalProperties: BillingLine }),
    byOrg: Type.Object({}, { additionalProperties: BillingLine }),
  },
  { title: 'BillingResponse' },
);

export const DailyUsage = Type.Object({ date: Type.String({ description: 'UTC day, YYYY-MM-DD' }), ...Counts, ...Unpriced }, { title: 'DailyUsage' });

export const DailyResponse = Type.Object(
  { days: Type.Array(DailyUsage, { description: 'Every UTC day of the range, zero-filled (at most 366; 30 by default)' }), count: Type.Integer() },
  { title: 'DailyResponse' },
);
