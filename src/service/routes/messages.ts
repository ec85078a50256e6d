import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { MessageListResponse, MessageQuery } from '../schemas/message.js';
import { entryMessageView } from '../views.js';

export const messageRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/messages',
    {
      schema: {
        tags: ['messages'],
        summary: 'Message history, newest first; agent matches sender or receiver',
        querystring: MessageQuery,
        response: { 200: MessageListResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { agent, threadId, limit = 50, offset = 0 } = request.query;
      const page = await organism.queries.journal.list({
        ...(agent !== undefined ? { agent } : {}),
        ...(threadId !== undefined ? { threadId } : {}),
        limit,
        offset,
        order: 'newest',
      });
      const messages = page.items.map(entryMessageView);
      return { messages, count: messages.length, total: page.total, offset, limit };
    },
  );
};
