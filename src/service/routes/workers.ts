import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { WorkerListResponse } from '../schemas/worker.js';
import { workerView } from '../worker-view.js';

/**
 * GET /workers: the processes of the organism, live ones first: a cluster's (PostgreSQL store)
 * from its workers table; an embedded organism's one process. The live views hear of changes
 * through `worker` events, which the watch started here emits while the service runs.
 */
export const workerRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const stopWatch = organism.watchWorkers();
  app.addHook('onClose', async () => stopWatch());
  app.get(
    '/workers',
    {
      schema: {
        tags: ['organism'],
        summary: "The processes running the organism (a cluster's serve and worker processes sharing its database, or the one embedded process), with their heartbeats",
        response: { 200: WorkerListResponse, ...errorResponses },
      },
    },
    async () => {
      const { shared, processes } = await organism.workers();
      const list = processes.map(workerView);
      return { shared, workers: list, count: list.length };
    },
  );
};
