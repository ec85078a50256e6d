import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { who } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { AnswerRequest, ApproveRequest, AnswerResponse, InboxClosed, InboxListResponse, InboxParams, InboxQuery, RejectRequest } from '../schemas/inbox.js';
import { inboxClosedView, inboxItemView, messageView } from '../views.js';

/**
 * The inbox (issue 25): asks waiting for people. Thin: listing, answering and rejecting are the
 * organism's (Organism.inbox); these routes read the caller's name for the record of who closed it.
 */
export const inboxRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['inbox'];

  app.get(
    '/inbox',
    { schema: { tags, summary: 'Open asks and pending approvals, oldest first', querystring: InboxQuery, response: { 200: InboxListResponse, ...errorResponses } } },
    async (request) => {
      const { listener, threadId, kind, limit = 50, offset = 0 } = request.query;
      const page = await organism.inbox.list({ ...(listener ? { listener } : {}), ...(threadId ? { threadId } : {}), ...(kind ? { kind } : {}), limit, offset });
      const items = page.items.map(inboxItemView);
      return { items, count: items.length, total: page.total, offset, limit };
    },
  );

  app.post(
    '/inbox/:id/answer',
    {
      config: { access: 'approver' },
      schema: {
        tags,
        summary: "Answers an ask: the listener's message to the asker (or a peer); the first answer wins",
        params: InboxParams,
        body: AnswerRequest,
        response: { 200: AnswerResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { payload, to, note } = request.body;
      const message = await organism.inbox.answer(request.params.id, { payload, ...(to !== undefined ? { to } : {}), ...(note !== undefined ? { note } : {}) }, who(request.principal));
      return { message: messageView(message, 'PENDING') };
    },
  );

  app.post(
    '/inbox/:id/approve',
    {
      config: { access: 'approver' },
      schema: {
        tags,
        summary: 'Approves the tool calls a model proposed, as proposed or edited (`calls`); the delivery continues with their results; the first decision wins',
        params: InboxParams,
        body: ApproveRequest,
        response: { 200: InboxClosed, ...errorResponses },
      },
    },
    async (request) => {
      const { calls, note } = request.body ?? {};
      return inboxClosedView(await organism.inbox.approve(request.params.id, { ...(calls !== undefined ? { calls } : {}), ...(note !== undefined ? { note } : {}) }, who(request.principal)));
    },
  );

  app.post(
    '/inbox/:id/reject',
    {
      config: { access: 'approver' },
      schema: {
        tags,
        summary: 'Rejects an ask (FAILED, rejected, with the note; the asker gets a SystemError) or an approval (the model hears the refusal and answers again)',
        params: InboxParams,
        body: RejectRequest,
        response: { 200: InboxClosed, ...errorResponses },
      },
    },
    async (request) => inboxClosedView(await organism.inbox.reject(request.params.id, request.body.note, who(request.principal))),
  );
};
