import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../errors/catalogue.js';
import type { JournalEntry } from '../../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../../core/llm.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { ThreadParams } from '../schemas/thread.js';
import { WaterfallResponse } from '../schemas/waterfall.js';
import { iso } from '../time.js';
import { deliveryTimesView } from '../views.js';

/** What one answer holds at most (a thread with more is `truncated`: its first ones). */
const MAX_DELIVERIES = 500;
const MAX_CALLS = 1000;

function deliveryView(e: JournalEntry) {
  const m = e.message;
  return {
    messageId: m.id,
    from: m.from,
    to: m.to,
    payloadType: m.payloadType,
    state: e.state,
    ...deliveryTimesView(e),
  };
}

function callView(c: LlmCallRecord, tools: readonly ToolCallRecord[]) {
  return {
    id: c.id,
    messageId: c.messageId,
    agent: c.agent,
    provider: c.provider,
    model: c.model,
    attempt: c.attempt,
    repair: c.repair,
    startedAt: iso(c.startedAt),
    latencyMs: c.latencyMs,
    usage: c.usage && { promptTokens: c.usage.promptTokens, completionTokens: c.usage.completionTokens, totalTokens: c.usage.totalTokens },
    cost: c.cost,
    finishReason: c.response?.finishReason ?? null,
    error: c.error,
    toolExecutions: tools
      .filter((t) => t.llmCallId === c.id)
      .map((t) => ({
        id: t.id,
        kind: t.kind ?? ('mcp' as const),
        server: t.server,
        tool: t.tool,
        startedAt: iso(t.startedAt),
        durationMs: t.durationMs,
        isError: t.isError,
        error: t.error,
      })),
  };
}

/**
 * A thread's deliveries (each attempt's queue wait and handler time) and its recorded LLM and
 * MCP tool calls, on one time axis: what the console's waterfall draws. Timings, usage and
 * outcomes only, so viewers may read it; prompts, answers, arguments and results stay on the
 * operators' llm-calls routes.
 */
export const waterfallRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/threads/:threadId/waterfall',
    {
      schema: {
        tags: ['threads'],
        summary: "A thread's deliveries and LLM/tool calls with their timings, oldest first (what the console's waterfall draws)",
        params: ThreadParams,
        response: { 200: WaterfallResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadId } = request.params;
      const thread = await organism.thread(threadId);
      if (!thread) throw Errors.THREAD_NOT_FOUND(threadId);
      const now = Date.now();
      const [journal, recorded] = await Promise.all([
        organism.queries.journal.list({ threadId, limit: MAX_DELIVERIES, offset: 0, order: 'oldest' }),
        organism.queries.llmCalls.forThread(threadId, { limit: MAX_CALLS, offset: 0 }),
      ]);
      return {
        threadId,
        status: thread.status,
        now: iso(now),
        deliveries: journal.items.map(deliveryView),
        calls: recorded.calls.map((c) => callView(c, recorded.tools)),
        record: organism.config.llm.record ?? 'full',
        truncated: journal.total > journal.items.length || recorded.total > recorded.calls.length,
      };
    },
  );
};
