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
  ThreadBudgetListQuery,
  ThreadBudgetListResponse,
  ThreadBudgetParams,
  UsageResponse,
} from '../schemas/usage.js';
import { persistedUsageRoutes } from './usage-store.js';

/**
 * Live usage (tracker aggregates) and thread budgets. Lookups never create a budget. A budget
 * is its thread's whole life's: live until the thread finishes, then kept (finished) for the
 * thread's next inject; activeThreads and the default list count live ones only.
 */
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
        activeThreads: await organism.queries.budgets.count(),
      },
    }),
  );

  app.get(
    '/usage/threads',
    {
      schema: {
        tags,
        summary: 'Thread budgets (live by default; ?state=finished|all), highest percentUsed first',
        querystring: ThreadBudgetListQuery,
        response: { 200: ThreadBudgetListResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { state = 'live', limit = 1000, offset = 0 } = request.query;
      const page = await organism.queries.budgets.list({ state, limit, offset });
      return { threads: page.items, count: page.items.length, total: page.total, offset, limit, state, defaultMaxTokens: organism.queries.budgets.defaultMaxTokens };
    },
  );

  app.get(
    '/usage/threads/:threadId',
    { schema: { tags, summary: "One thread's budget, live or finished", params: ThreadBudgetParams, response: { 200: ThreadBudgetInfo, ...errorResponses } } },
    async (request) => {
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
        summary: "Set one thread's token ceiling; a thread without a budget (not started yet) gets one, which its first inject runs under",
        params: ThreadBudgetParams,
        body: SetBudgetRequest,
        response: { 200: ThreadBudgetInfo, ...errorResponses },
      },
    },
    async (request) => {
      // The budget may be created here: its thread id must be one an inject can use.
      return organism.setThreadBudget(request.params.threadId, request.body.maxTokens);
    },
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

  app.post('/usage/reset', { schema: { tags, summary: 'Clear the live usage aggregates (persisted usage is kept)', response: { 200: ResetResponse, ...errorResponses } } }, async () => {
    organism.tracker.reset();
    return { success: true as const, message: 'Usage tracking reset' as const };
  });

  await app.register(persistedUsageRoutes, ctx);
};
