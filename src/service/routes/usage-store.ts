import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { UsageEvent } from '../../usage/types.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { BillingQuery, BillingResponse, DailyQuery, DailyResponse, UsageHistoryQuery, UsageHistoryResponse } from '../schemas/usage.js';
import { iso, isoOrNull, parseTimeRange } from '../time.js';

function eventView(e: UsageEvent) {
  return {
    id: e.id,
    timestamp: iso(e.timestamp),
    threadId: e.threadId,
    agentId: e.agentId,
    messageId: e.messageId,
    model: e.model,
    provider: e.provider,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    totalTokens: e.totalTokens,
    cacheReadTokens: e.cacheReadTokens,
    cacheWriteTokens: e.cacheWriteTokens,
    reasoningTokens: e.reasoningTokens,
    latencyMs: e.providerLatencyMs,
    providerLatencyMs: e.providerLatencyMs,
    totalLatencyMs: e.totalLatencyMs,
    estimatedCost: e.cost,
    metadata: { ...e.metadata },
  };
}

/** Persisted usage (the usage store): history, billing, daily. Times in and out are ISO 8601. */
export const persistedUsageRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['usage'];
  const store = () => organism.queries.usage;

  app.get(
    '/usage/history',
    {
      schema: {
        tags,
        summary: 'Persisted usage events, newest first; total honours every filter',
        querystring: UsageHistoryQuery,
        response: { 200: UsageHistoryResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { orgId, agentId, model, threadId, userId, limit = 100, offset = 0 } = request.query;
      const range = parseTimeRange(request.query.startTime, request.query.endTime);
      const page = await store().history({
        ...range,
        ...(orgId !== undefined ? { orgId } : {}),
        ...(agentId !== undefined ? { agentId } : {}),
        ...(model !== undefined ? { model } : {}),
        ...(threadId !== undefined ? { threadId } : {}),
        ...(userId !== undefined ? { userId } : {}),
        limit,
        offset,
      });
      const events = page.items.map(eventView);
      return { events, count: events.length, total: page.total, offset, limit };
    },
  );

  app.get(
    '/usage/billing',
    { schema: { tags, summary: 'Billing summary by model, agent and organization', querystring: BillingQuery, response: { 200: BillingResponse, ...errorResponses } } },
    async (request) => {
      const { orgId } = request.query;
      const range = parseTimeRange(request.query.startTime, request.query.endTime);
      const b = await store().billing({ ...range, ...(orgId !== undefined ? { orgId } : {}) });
      return { ...b, startTime: isoOrNull(b.startTime), endTime: isoOrNull(b.endTime) };
    },
  );

  app.get('/usage/daily', { schema: { tags, summary: 'Usage per UTC day', querystring: DailyQuery, response: { 200: DailyResponse, ...errorResponses } } }, async (request) => {
    const { orgId } = request.query;
    const range = parseTimeRange(request.query.startTime, request.query.endTime);
    const d = await store().daily({ ...range, ...(orgId !== undefined ? { orgId } : {}) });
    return { days: [...d.days], count: d.count };
  });
};
