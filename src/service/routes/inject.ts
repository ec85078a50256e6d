import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { InjectRequest, InjectResponse } from '../schemas/inject.js';
import { callerTraceContext } from '../tracing.js';

/** How long an injection may wait for room in a full queue before the 503 "busy". */
const INJECT_WAIT_MS = 1_000;

export const injectRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.post(
    '/inject',
    {
      schema: {
        tags: ['inject'],
        summary: 'Deliver a message into the pump (journaled before the answer)',
        body: InjectRequest,
        response: { 200: InjectResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { to, payload, threadId, metadata } = request.body;
      const meta: Record<string, string> = {};
      if (metadata?.orgId !== undefined) meta['orgId'] = metadata.orgId;
      if (metadata?.userId !== undefined) meta['userId'] = metadata.userId;
      const traceContext = callerTraceContext(request);
      return organism.inject(to, payload, {
        ...(traceContext !== undefined ? { traceContext } : {}),
        ...(threadId !== undefined ? { threadId } : {}),
        ...(Object.keys(meta).length > 0 ? { metadata: meta } : {}),
        waitMs: INJECT_WAIT_MS,
      });
    },
  );
};
