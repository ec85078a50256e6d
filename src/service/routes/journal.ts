import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../errors/catalogue.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { JournalEntryInfo, JournalListResponse, JournalParams, JournalQuery, JournalStats, RedeliverResponse } from '../schemas/journal.js';
import { journalEntryView, journalStatsView } from '../views.js';
import { bulkSelection, eachId, findFilter, truncation } from '../find.js';
import { BULK_MAX, BulkRedeliverRequest, BulkRedeliverResponse } from '../schemas/find.js';

export const journalRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['journal'];
  const journal = () => organism.queries.journal;

  app.get(
    '/journal',
    { schema: { tags, summary: 'Journal entries, newest first', querystring: JournalQuery, response: { 200: JournalListResponse, ...errorResponses } } },
    async (request) => {
      const { state, threadId, agent, limit = 50, offset = 0 } = request.query;
      const page = await journal().list({
        ...(state !== undefined ? { state } : {}),
        ...(threadId ? { threadId } : {}),
        ...(agent ? { agent } : {}),
        ...findFilter(request.query),
        limit,
        offset,
        order: 'newest',
      });
      const entries = page.items.map(journalEntryView);
      return { entries, count: entries.length, total: page.total, offset, limit, ...truncation(page) };
    },
  );

  app.get('/journal/stats', { schema: { tags, summary: 'Counts per state, oldest pending age, last recovery', response: { 200: JournalStats, ...errorResponses } } }, async () => {
    const stats = await journal().stats();
    return journalStatsView({ ...stats, lastRecovery: organism.lastRecovery ?? stats.lastRecovery });
  });

  app.get('/journal/:messageId', { schema: { tags, params: JournalParams, response: { 200: JournalEntryInfo, ...errorResponses } } }, async (request) => {
    const entry = await journal().get(request.params.messageId);
    if (!entry) throw Errors.JOURNAL_ENTRY_NOT_FOUND(request.params.messageId);
    return journalEntryView(entry);
  });

  app.post(
    '/journal/redeliver',
    {
      schema: {
        tags,
        summary: `Redeliver many FAILED entries: the ids given, or every FAILED entry the filter matches (oldest first, at most ${BULK_MAX} a request)`,
        body: BulkRedeliverRequest,
        response: { 200: BulkRedeliverResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { messageIds, filter } = request.body;
      bulkSelection(messageIds, filter, 'messageIds');
      let ids: string[];
      let matched: number;
      let searched = {};
      /** The thread of each entry the filter found (the ids given are looked up one by one). */
      const threadOf = new Map<string, string>();
      if (messageIds) {
        ids = [...new Set(messageIds)];
        matched = ids.length;
      } else {
        const { threadId, agent } = filter!;
        const page = await journal().list({
          state: 'FAILED',
          ...(threadId ? { threadId } : {}),
          ...(agent ? { agent } : {}),
          ...findFilter(filter!),
          limit: BULK_MAX,
          offset: 0,
          order: 'oldest',
        });
        for (const e of page.items) threadOf.set(e.message.id, e.message.threadId);
        ids = [...threadOf.keys()];
        matched = page.total;
        searched = truncation(page);
      }
      // One at a time, oldest first: the entries go back to their queues in the order they were sent.
      const outcome = await eachId(
        ids,
        1,
        async (id) => {
          let threadId = threadOf.get(id);
          if (threadId === undefined) {
            const entry = await journal().get(id);
            if (!entry) throw Errors.JOURNAL_ENTRY_NOT_FOUND(id);
            if (entry.state !== 'FAILED') throw Errors.JOURNAL_NOT_REDELIVERABLE(id, entry.state);
            threadId = entry.message.threadId;
          }
          await organism.redeliver(id, threadId);
        },
        (err, id) => request.log.error({ err, messageId: id }, 'bulk redeliver: a redelivery failed'),
      );
      return { matched, attempted: ids.length, redelivered: outcome.done, skipped: outcome.skipped, ...searched };
    },
  );

  app.post(
    '/journal/:messageId/redeliver',
    { schema: { tags, summary: 'Deliver a FAILED entry again (new attempt)', params: JournalParams, response: { 200: RedeliverResponse, ...errorResponses } } },
    async (request) => {
      const { messageId } = request.params;
      const entry = await journal().get(messageId);
      if (!entry) throw Errors.JOURNAL_ENTRY_NOT_FOUND(messageId);
      if (entry.state !== 'FAILED') throw Errors.JOURNAL_NOT_REDELIVERABLE(messageId, entry.state);
      await organism.redeliver(messageId, entry.message.threadId);
      return { success: true as const, messageId, threadId: entry.message.threadId, state: 'PENDING' as const };
    },
  );
};
