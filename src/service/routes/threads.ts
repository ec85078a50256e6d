import type { Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Errors } from '../../errors/catalogue.js';
import { THREAD_STATUSES, type ThreadRecord, type ThreadStatus } from '../../core/thread.js';
import { who } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { MessageListResponse } from '../schemas/message.js';
import {
  CassetteResponse,
  CompareParams,
  CompareResponse,
  EraseResponse,
  ForkRequest,
  ForkResponse,
  HoldResponse,
  KillResponse,
  PauseRequest,
  ResumeRequest,
  ThreadDetail,
  ThreadListResponse,
  ThreadPageQuery,
  ThreadParams,
  ThreadQuery,
} from '../schemas/thread.js';
import { entryMessageView, erasureView, holdView, threadUsageView, threadView } from '../views.js';
import { bulkSelection, eachId, findFilter, truncation } from '../find.js';
import { BULK_MAX, BulkKillRequest, BulkKillResponse } from '../schemas/find.js';

/** Kills a bulk kill runs at once (each waits for its store write). */
const KILL_CONCURRENCY = 8;

/** How many messages GET /threads/{id} embeds (the latest ones, oldest first). */
const EMBEDDED_MESSAGES = 100;

function parseStatus(value: string | undefined): ThreadStatus | undefined {
  if (value === undefined) return undefined;
  if ((THREAD_STATUSES as readonly string[]).includes(value)) return value as ThreadStatus;
  throw Errors.INVALID_THREAD_STATUS(value, THREAD_STATUSES.join(', '));
}

export const threadRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['threads'];

  async function existing(id: string): Promise<ThreadRecord> {
    const thread = await organism.thread(id);
    if (!thread) throw Errors.THREAD_NOT_FOUND(id);
    return thread;
  }

  app.get(
    '/threads',
    { schema: { tags, summary: 'Threads, newest activity first', querystring: ThreadQuery, response: { 200: ThreadListResponse, ...errorResponses } } },
    async (request) => {
      const { agent, limit = 50, offset = 0 } = request.query;
      const status = parseStatus(request.query.status);
      if (status === 'held') {
        // The held threads (few): their records, newest activity first, then the other filters.
        const held = (await organism.heldThreads()).filter((t) => !agent || t.participants.includes(agent));
        const threads = held.slice(offset, offset + limit).map(threadView);
        return { threads, count: threads.length, total: held.length, offset, limit };
      }
      const page = await organism.queries.threads.list({
        ...(status ? { status } : {}),
        ...(agent ? { agent } : {}),
        ...findFilter(request.query),
        limit,
        offset,
      });
      // A held thread is stored active or waiting: shown held (with its hold).
      const threads = (await organism.holds.views(page.items)).map(threadView);
      return { threads, count: threads.length, total: page.total, offset, limit, ...truncation(page) };
    },
  );

  app.get(
    '/threads/:threadId',
    { schema: { tags, summary: 'A thread with its latest 100 messages (oldest first) and its LLM usage', params: ThreadParams, response: { 200: ThreadDetail, ...errorResponses } } },
    async (request) => {
      const thread = await organism.threadView(request.params.threadId);
      const page = await organism.queries.journal.list({ threadId: thread.id, limit: EMBEDDED_MESSAGES, offset: 0, order: 'newest' });
      const usage = await organism.threadUsage(thread.id);
      const erasure = await organism.erasureOf(thread.id);
      return {
        ...threadView(thread),
        hold: thread.hold ? holdView(thread.hold) : null,
        messages: page.items.map(entryMessageView).reverse(),
        usage: threadUsageView(usage),
        erasure: erasure && erasureView(erasure),
      };
    },
  );

  app.get(
    '/threads/:threadId/messages',
    {
      schema: {
        tags,
        summary: 'Messages of a thread, oldest first (conversation order)',
        params: ThreadParams,
        querystring: ThreadPageQuery,
        response: { 200: MessageListResponse, ...errorResponses },
      },
    },
    async (request) => {
      const thread = await existing(request.params.threadId);
      const { limit = 50, offset = 0 } = request.query;
      const page = await organism.queries.journal.list({ threadId: thread.id, limit, offset, order: 'oldest' });
      const messages = page.items.map(entryMessageView);
      return { messages, count: messages.length, total: page.total, offset, limit };
    },
  );

  app.post(
    '/threads/kill',
    {
      schema: {
        tags,
        summary: `Kill many threads: the ids given, or every unfinished (active or waiting) thread the filter matches (at most ${BULK_MAX} a request)`,
        body: BulkKillRequest,
        response: { 200: BulkKillResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadIds, filter } = request.body;
      bulkSelection(threadIds, filter, 'threadIds');
      let ids: string[];
      let matched: number;
      let searched = {};
      if (threadIds) {
        ids = [...new Set(threadIds)];
        matched = ids.length;
      } else {
        const { agent, status } = filter!;
        const query = { ...(agent ? { agent } : {}), ...findFilter(filter!), offset: 0 };
        // Both unfinished statuses unless one is named: a thread waiting on a person is as killable as an active one.
        let room = BULK_MAX;
        const pages = [];
        if (status === 'held') {
          const held = (await organism.heldThreads()).filter((t) => !agent || t.participants.includes(agent));
          pages.push({ items: held, total: held.length });
        }
        for (const s of status === 'held' ? [] : status ? [status] : (['active', 'waiting'] as const)) {
          const page = await organism.queries.threads.list({ ...query, status: s, limit: Math.max(1, room) });
          room -= page.items.length;
          pages.push(page);
        }
        ids = pages
          .flatMap((p) => p.items)
          .slice(0, BULK_MAX)
          .map((t) => t.id);
        matched = pages.reduce((n, p) => n + p.total, 0);
        searched = pages[0]?.searchTruncated === undefined ? {} : { searchTruncated: pages.some((p) => p.searchTruncated === true) };
      }
      const by = who(request.principal);
      const outcome = await eachId(
        ids,
        KILL_CONCURRENCY,
        async (id) => void (await organism.killThread(id, by)),
        (err, id) => request.log.error({ err, threadId: id }, 'bulk kill: a kill failed'),
      );
      return { matched, attempted: ids.length, killed: outcome.done, skipped: outcome.skipped, ...searched };
    },
  );

  app.post(
    '/threads/:threadId/fork',
    {
      schema: {
        tags,
        summary:
          "Fork a thread (time travel): a new thread with the source's messages before atMessageId as its history, running on from atMessageId, its LLM calls answered from the source's record while their requests match (operator)",
        params: ThreadParams,
        body: ForkRequest,
        response: { 200: ForkResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { atMessageId, configPath, dryRun } = request.body ?? {};
      const fork = await organism.fork(request.params.threadId, {
        ...(atMessageId !== undefined ? { atMessageId } : {}),
        ...(configPath !== undefined ? { configPath } : {}),
        ...(dryRun ? { dryRun } : {}),
      });
      const { config } = fork;
      return { ...fork, config: config && { ...config, updated: [...config.updated], removed: [...config.removed], changed: [...config.changed] } };
    },
  );

  app.get(
    '/threads/:threadId/compare/:otherId',
    {
      config: { access: 'operator' },
      schema: {
        tags,
        summary:
          "Two threads (a fork beside its source) aligned message by message: the first divergence, the first LLM call whose request differs, tool calls made in only one, and each one's tokens, cost and latency (operator)",
        params: CompareParams,
        response: { 200: CompareResponse, ...errorResponses },
      },
    },
    async (request) => organism.compare(request.params.threadId, request.params.otherId),
  );

  app.get(
    '/threads/:threadId/export',
    {
      config: { access: 'operator' },
      schema: {
        tags,
        summary:
          'The thread as a cassette (time travel, operator): a versioned JSON document of its messages and recorded LLM and tool calls, as recorded (prompts subject to llm.record; never a key)',
        params: ThreadParams,
        response: { 200: CassetteResponse, ...errorResponses },
      },
    },
    // The records go out as stored (their fields are LlmCall's, times in ms): open objects in the schema.
    async (request) => (await organism.exportThread(request.params.threadId)) as unknown as Static<typeof CassetteResponse>,
  );

  app.post(
    '/threads/:threadId/kill',
    { schema: { tags, summary: 'Abort in-flight work, drop queued messages, refuse new ones', params: ThreadParams, response: { 200: KillResponse, ...errorResponses } } },
    async (request) => {
      const { threadId } = request.params;
      await organism.killThread(threadId, who(request.principal));
      return { success: true as const, threadId };
    },
  );

  app.post(
    '/threads/:threadId/pause',
    {
      schema: {
        tags,
        summary: 'Hold a thread: its deliveries stay PENDING (nothing in flight is interrupted) until it is resumed; its status reads `held` with the reason',
        params: ThreadParams,
        body: Type.Union([PauseRequest, Type.Null()]),
        response: { 200: HoldResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadId } = request.params;
      const { thread, hold } = await organism.pauseThread(threadId, who(request.principal), request.body?.reason);
      return { success: true as const, threadId, status: thread.status, hold: holdView(hold) };
    },
  );

  app.post(
    '/threads/:threadId/resume',
    {
      schema: {
        tags,
        summary: "Resume a held thread (`raiseLimits`: double the loop breaker's limits for it)",
        params: ThreadParams,
        body: Type.Union([ResumeRequest, Type.Null()]),
        response: { 200: HoldResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadId } = request.params;
      const { thread, hold } = await organism.resumeThread(threadId, who(request.principal), request.body?.raiseLimits === true);
      return { success: true as const, threadId, status: thread.status, hold: holdView(hold) };
    },
  );

  app.delete(
    '/threads/:threadId',
    {
      schema: {
        tags,
        summary: 'Erase a finished thread: its payloads, recorded LLM and tool calls and events become tombstones; usage and billing totals stay exact (409 while it runs)',
        params: ThreadParams,
        response: { 200: EraseResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { threadId } = request.params;
      const erasure = await organism.eraseThread(threadId, who(request.principal));
      return { success: true as const, threadId, erasure: erasureView(erasure) };
    },
  );
};
