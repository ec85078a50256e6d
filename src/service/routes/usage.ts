import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../errors/catalogue.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import {
  AgentUsageInfo,
  AgentUsageParams,
  ModelUsageInfo,
  ModelUsageParams,
  ResetResponse,
  SetBudgetRequest,
  ThreadBudgetInfo,
  ThreadBudgetListResponse,
  ThreadBudgetParams,
  UsageResponse,
} from '../schemas/usage.js';
import { persistedUsageRoutes } from './usage-store.js';

/** Live usage (tracker aggregates) and thread budgets. Lookups never create a budget. */
export const usageRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, ctx) => {
  const { organism } = ctx;
  const tags = ['usage'];

  app.get(
    '/usage',
    { schema: { tags, summary: 'Totals, per agent, per model, and the number of threads with a budget', response: { 200: UsageResponse, ...errorResponses } } },
    async () => ({
      usage: {
        totals: organism.tracker.totals(),
        byAgent: organism.tracker.byAgent(),
        byModel: organism.tracker.byModel(),
        activeThreads: await organism.budgets.count(),
      },
    }),
  );

  app.get(
    '/usage/threads',
    { schema: { tags, summary: 'Thread budgets, highest percentUsed first', response: { 200: ThreadBudgetListResponse, ...errorResponses } } },
    async () => {
      // Live budgets only (finished threads answer at /usage/threads/{id}, /threads/{id}).
      const threads = [...(await organism.budgets.list())].sort((a, b) => b.percentUsed - a.percentUsed).map((b) => ({ ...b, active: true }));
      return { threads, count: threads.length, defaultMaxTokens: organism.budgets.defaultMaxTokens };
    },
  );

  app.get(
    '/usage/threads/:threadId',
    { schema: { tags, params: ThreadBudgetParams, response: { 200: ThreadBudgetInfo, ...errorResponses } } },
    async (request) => {
      // A finished thread answers too: its last ceiling and its spend from the usage store.
      const info = await organism.threadBudget(request.params.threadId);
      if (!info) throw Errors.BUDGET_NOT_FOUND(request.params.threadId);
      return info;
    },
  );

  app.put(
    '/usage/threads/:threadId',
    {
      schema: {
        tags,
        summary: "Raise or lower one thread's token ceiling",
        params: ThreadBudgetParams,
        body: SetBudgetRequest,
        response: { 200: ThreadBudgetInfo, ...errorResponses },
      },
    },
    async (request) => ({ ...(await organism.setThreadBudget(request.params.threadId, request.body.maxTokens)), active: true }),
  );

  app.get(
    '/usage/agents/:agentId',
    { schema: { tags, summary: 'Usage of one agent (zeros when none is recorded)', params: AgentUsageParams, response: { 200: AgentUsageInfo, ...errorResponses } } },
    async (request) => organism.tracker.agent(request.params.agentId),
  );

  app.get(
    '/usage/models/:model',
    { schema: { tags, summary: 'Usage of one model (zeros when none is recorded)', params: ModelUsageParams, response: { 200: ModelUsageInfo, ...errorResponses } } },
    async (request) => organism.tracker.model(request.params.model),
  );

  app.post(
    '/usage/reset',
    { schema: { tags, summary: 'Clear the live usage aggregates (persisted usage is kept)', response: { 200: ResetResponse, ...errorResponses } } },
    async () => {
      organism.tracker.reset();
      return { success: true as const, message: 'Usage tracking reset' as const };
    },
  );

  await app.register(persistedUsageRoutes, ctx);
};
