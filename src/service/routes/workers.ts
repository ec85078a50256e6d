import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { WorkerRecord } from '../../core/work-source.js';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { WorkerListResponse } from '../schemas/worker.js';
import { iso, isoOrNull } from '../time.js';

/** GET /workers: the processes of a clustered organism (PostgreSQL store), live ones first. */
export const workerRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/workers',
    {
      schema: {
        tags: ['organism'],
        summary: "The serve and worker processes sharing this organism's database, with their heartbeats",
        response: { 200: WorkerListResponse, ...errorResponses },
      },
    },
    async () => {
      const workers = await organism.workers();
      const list = (workers ?? []).map(workerView);
      return { shared: workers !== null, workers: list, count: list.length };
    },
  );
};

function workerView(w: WorkerRecord) {
  return {
    id: w.id,
    kind: w.kind,
    name: w.name,
    host: w.host,
    pid: w.pid,
    handlers: w.handlers,
    configHash: w.configHash,
    startedAt: iso(w.startedAt),
    lastHeartbeat: iso(w.heartbeatAt),
    stoppedAt: isoOrNull(w.stoppedAt),
    alive: w.alive,
    concurrency: w.concurrency,
    inFlight: w.inFlight,
    leaseSeconds: w.leaseMs / 1000,
  };
}
