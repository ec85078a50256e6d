import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { uptimeSeconds, type ServiceContext } from '../context.js';
import { HealthResponse } from '../schemas/health.js';
import { errorResponses } from '../schemas/error.js';

/** GET /health: no prefix, no auth (load balancers and supervisors poll it). */
export const healthRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/health',
    {
      config: { access: 'public' },
      schema: { tags: ['health'], summary: 'Liveness', security: [], response: { 200: HealthResponse, ...errorResponses } },
    },
    async () => ({ status: 'healthy' as const, organism: organism.name, uptimeSeconds: uptimeSeconds(organism) }),
  );
};
