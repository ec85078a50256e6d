import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { uptimeSeconds, type ServiceContext } from '../context.js';
import { HealthProblem, HealthResponse } from '../schemas/health.js';
import { errorResponses } from '../schemas/error.js';

/**
 * GET /health: no prefix, no auth (load balancers and supervisors poll it). 200 healthy, or
 * 503 naming the storage's problem: a server that cannot keep what it is sent is taken out of
 * rotation (degraded while the disk is full, unhealthy once its data is deleted or damaged).
 */
export const healthRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/health',
    {
      config: { access: 'public' },
      schema: { tags: ['health'], summary: 'Liveness', security: [], response: { 200: HealthResponse, ...errorResponses, 503: HealthProblem } },
    },
    async (_request, reply) => {
      const problem = organism.storageProblem();
      const base = { organism: organism.name, uptimeSeconds: uptimeSeconds(organism) };
      if (!problem) return { status: 'healthy' as const, ...base };
      return reply.code(503).send({ status: problem.status, ...base, code: problem.error.code, detail: problem.error.detail });
    },
  );
};
