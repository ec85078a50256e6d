import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Errors } from '../../errors/catalogue.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { JournalEntryInfo, JournalListResponse, JournalParams, JournalQuery, JournalStats, RedeliverResponse } from '../schemas/journal.js';
import { journalEntryView, journalStatsView } from '../views.js';

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
        ...(threadId !== undefined ? { threadId } : {}),
        ...(agent !== undefined ? { agent } : {}),
        limit,
        offset,
        order: 'newest',
      });
      const entries = page.items.map(journalEntryView);
      return { entries, count: entries.length, total: page.total, offset, limit };
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
