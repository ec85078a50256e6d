import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sanitizeConfig, sanitizedConfigYaml } from '../../config/index.js';
import { Errors } from '../../errors/catalogue.js';
import { uptimeSeconds, type ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { ConfigQuery, EdgeTrafficResponse, OrganismConfig, OrganismInfo, ReloadQuery, ReloadResponse, RestartResponse, StopResponse } from '../schemas/organism.js';
import { isoOrNull } from '../time.js';
import { journalStatsView } from '../views.js';

export const organismRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, ctx) => {
  const { organism } = ctx;

  app.get('/organism', { schema: { tags: ['organism'], summary: 'Organism overview', response: { 200: OrganismInfo, ...errorResponses } } }, async () => {
    const [stats, activeThreads, inbox] = await Promise.all([organism.queries.journal.stats(), organism.activeThreadTotal(), organism.inbox.counts()]);
    return {
      name: organism.name,
      status: organism.status,
      uptimeSeconds: uptimeSeconds(organism),
      agentCount: organism.agents().length,
      activeThreads,
      totalMessages: organism.totalMessages,
      version: ctx.version,
      startedAt: isoOrNull(organism.startedAt),
      bootId: organism.bootId,
      journal: journalStatsView({ ...stats, lastRecovery: organism.lastRecovery ?? stats.lastRecovery }),
      inbox,
    };
  });

  app.get(
    '/organism/config',
    {
      schema: {
        tags: ['organism'],
        summary: 'Sanitized configuration (no secrets)',
        description: 'JSON with camelCase keys by default; `format=yaml` answers the same view as organism.yaml is written (snake_case keys), as application/yaml.',
        querystring: ConfigQuery,
        response: { 200: OrganismConfig, ...errorResponses },
      },
    },
    async (request, reply) => {
      if (request.query.format === 'yaml')
        return reply
          .type('application/yaml; charset=utf-8')
          .serializer((s) => s as string)
          .send(sanitizedConfigYaml(organism.config) as never);
      return sanitizeConfig(organism.config) as Record<string, unknown>;
    },
  );

  app.get(
    '/organism/edges',
    {
      schema: {
        tags: ['organism'],
        summary: 'Traffic per sender -> receiver since the server started: messages sent and sends denied',
        response: { 200: EdgeTrafficResponse, ...errorResponses },
      },
    },
    async () => {
      const edges = organism.traffic.list().map((e) => ({ ...e, lastAt: new Date(e.lastAt).toISOString() }));
      return { edges, count: edges.length };
    },
  );

  app.post(
    '/organism/reload',
    {
      schema: {
        tags: ['organism'],
        summary: 'Re-read organism.yaml and apply the listener diff (or only report it with dryRun)',
        description:
          'A reload that does not succeed answers 500 (the spec), the error text as `detail`. An invalid ' +
          'configuration is one of them: 500 with `code: RELOAD_INVALID` and `errors` listing every problem ' +
          '(file:line:column); nothing is applied. With dryRun=true the same problems answer 422.',
        querystring: ReloadQuery,
        response: { 200: ReloadResponse, ...errorResponses },
      },
    },
    async (request) => {
      const dryRun = request.query.dryRun === true;
      let result;
      try {
        ({ result } = await ctx.reloader.run({ dryRun }));
      } catch (err) {
        // Reporting on a file is not a reload that failed: the dry run keeps the client error.
        throw dryRun && Errors.RELOAD_INVALID.is(err) ? err.withStatus(422) : err;
      }
      if (!result.success) throw result.error ? Errors.RELOAD_FAILED(result.error) : Errors.RELOAD_FAILED_DEFAULT();
      return {
        success: true,
        added: [...result.added],
        removed: [...result.removed],
        updated: [...result.updated],
        updatedFields: Object.fromEntries(Object.entries(result.updatedFields).map(([name, fields]) => [name, [...fields]])),
        changed: [...result.changed],
        restartRequired: [...result.restartRequired],
        error: null,
        dryRun,
      };
    },
  );

  app.post(
    '/organism/stop',
    { schema: { tags: ['organism'], summary: 'Stop gracefully (drain, flush, exit 0)', response: { 200: StopResponse, ...errorResponses } } },
    async (_request, reply) => {
      // The answer goes out first; the shutdown (which closes the server) starts once it is sent (or the client is gone).
      reply.raw.once('close', () => (ctx.onStop ? ctx.onStop() : void organism.stop().catch(() => undefined)));
      return { success: true as const, status: 'stopping' as const };
    },
  );

  app.post(
    '/organism/restart',
    { schema: { tags: ['organism'], summary: 'Graceful restart (same PID)', response: { 202: RestartResponse, ...errorResponses } } },
    async (_request, reply) => {
      const onRestart = ctx.onRestart;
      if (!onRestart) throw Errors.RESTART_UNAVAILABLE();
      reply.raw.once('close', () => onRestart());
      return reply.code(202).send({ success: true as const, status: 'restarting' as const });
    },
  );
};
