import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../errors/catalogue.js';
import type { LlmCallRecord, ToolCallRecord } from '../../llm/call-record.js';
import type { RecordedCalls } from '../../core/storage.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { AgentLlmCallsResponse, DeliveryLlmCallsResponse, LlmCallPageQuery, MessageIdParams, ThreadLlmCallsResponse } from '../schemas/llm-call.js';
import { AgentParams } from '../schemas/agent.js';
import { ThreadParams } from '../schemas/thread.js';
import { iso } from '../time.js';

function toolView(t: ToolCallRecord) {
  return {
    id: t.id,
    kind: t.kind ?? ('mcp' as const),
    server: t.server,
    tool: t.tool,
    arguments: t.arguments ?? null,
    result: t.result,
    isError: t.isError,
    error: t.error,
    startedAt: iso(t.startedAt),
    durationMs: t.durationMs,
    replayed: t.replayed ?? false,
  };
}

function callView(c: LlmCallRecord, tools: readonly ToolCallRecord[]) {
  return {
    id: c.id,
    threadId: c.threadId,
    messageId: c.messageId,
    agent: c.agent,
    provider: c.provider,
    model: c.model,
    responseModel: c.responseModel,
    attempt: c.attempt,
    repair: c.repair,
    startedAt: iso(c.startedAt),
    latencyMs: c.latencyMs,
    request: c.request ?? null,
    tools: [...c.tools],
    response: c.response && {
      text: c.response.text,
      toolCalls: c.response.toolCalls.map((t) => ({ id: t.id, name: t.name, arguments: t.arguments })),
      finishReason: c.response.finishReason,
    },
    usage: c.usage && { ...c.usage },
    // Calls recorded before these fields existed have neither.
    maxOutputTokens: c.maxOutputTokens ?? null,
    overOutputCap: c.overOutputCap ?? false,
    cost: c.cost,
    error: c.error,
    guard: c.guard ? { name: c.guard.name, stage: c.guard.stage, reason: c.guard.reason } : null,
    // Calls recorded before the field: metadata mode is the one that drops the request.
    record: c.record ?? (c.request == null ? ('metadata' as const) : ('full' as const)),
    toolExecutions: tools.filter((t) => t.llmCallId === c.id).map(toolView),
    requestHash: c.requestHash ?? null,
    replayed: c.replayed ?? false,
    replayOf: c.replayOf ?? null,
  };
}

const views = (r: RecordedCalls) => r.calls.map((c) => callView(c, r.tools));

/**
 * Recorded LLM calls (llm.record): prompts as sent, answers, usage, cost, latency, attempts,
 * repair rounds, errors, and the MCP tool calls they led to. Operators only: prompts can hold
 * sensitive data.
 */
export const llmCallRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const config = { access: 'operator' as const };

  app.get(
    '/journal/:messageId/llm-calls',
    {
      config,
      schema: {
        tags: ['journal'],
        summary: 'The LLM calls (and MCP tool calls) of one delivery, oldest first (operator)',
        params: MessageIdParams,
        response: { 200: DeliveryLlmCallsResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { messageId } = request.params;
      if (!(await organism.queries.journal.get(messageId))) throw Errors.JOURNAL_ENTRY_NOT_FOUND(messageId);
      const recorded = await organism.queries.llmCalls.forMessage(messageId);
      const calls = views(recorded);
      return { messageId, calls, count: calls.length };
    },
  );

  app.get(
    '/threads/:threadId/llm-calls',
    {
      config,
      schema: {
        tags: ['threads'],
        summary: 'The LLM calls (and MCP tool calls) of a thread, oldest first (operator)',
        params: ThreadParams,
        querystring: LlmCallPageQuery,
        response: { 200: ThreadLlmCallsResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadId } = request.params;
      if (!(await organism.thread(threadId))) throw Errors.THREAD_NOT_FOUND(threadId);
      const { limit = 50, offset = 0 } = request.query;
      const recorded = await organism.queries.llmCalls.forThread(threadId, { limit, offset });
      const calls = views(recorded);
      return { threadId, calls, count: calls.length, total: recorded.total, offset, limit };
    },
  );

  app.get(
    '/agents/:name/llm-calls',
    {
      config,
      schema: {
        tags: ['agents'],
        summary: "The agent's latest LLM calls across its threads, newest first, failed attempts included (operator)",
        params: AgentParams,
        querystring: LlmCallPageQuery,
        response: { 200: AgentLlmCallsResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { name } = request.params;
      organism.agent(name); // AGENT_NOT_FOUND (404) for a name the organism does not have
      const { limit = 50, offset = 0 } = request.query;
      const recorded = await organism.queries.llmCalls.forAgent(name, { limit, offset });
      const calls = views(recorded);
      return { agent: name, calls, count: calls.length, total: recorded.total, offset, limit };
    },
  );
};
