import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { LoadedOrganism } from '../config/types.js';
import type { Organism } from '../organism/organism.js';
import type { Logger } from '../util/logger.js';
import { registerAuth, type AuthSettings } from './auth.js';
import { registerConsole } from './console.js';
import type { ServiceContext } from './context.js';
import { Errors } from '../errors/catalogue.js';
import { registerErrorHandling, sendError, toOrganismError } from './errors.js';
import { answerClientError, refuseMissingHost, registerHttpRefusals } from './http-refusals.js';
import { registerJsonParser } from './json-parser.js';
import { registerMetrics } from './metrics.js';
import { registerTracing, type HttpTracingOptions } from './tracing.js';
import { earlyRequestCheck, registerQueryCheck } from './query-check.js';
import { registerRouteConfig } from './route-config.js';
import { sharedSerializers } from './serializers.js';
import { Reloader, type ReloadOptions } from './reloader.js';
import { lazyRequestLogger, RequestLog, type RequestLogSettings } from './request-log.js';
import { openApiOptions } from './openapi.js';
import { a2aRoutes } from './routes/a2a.js';
import { agentRoutes } from './routes/agents.js';
import { mcpRoutes } from './routes/mcp.js';
import { capabilityRoutes } from './routes/capabilities.js';
import { healthRoutes } from './routes/health.js';
import { injectRoutes } from './routes/inject.js';
import { journalRoutes } from './routes/journal.js';
import { inboxRoutes } from './routes/inbox.js';
import { interopRoutes } from './routes/interop.js';
import { llmCallRoutes } from './routes/llm-calls.js';
import { waterfallRoutes } from './routes/waterfall.js';
import { messageRoutes } from './routes/messages.js';
import { organismRoutes } from './routes/organism.js';
import { threadRoutes } from './routes/threads.js';
import { usageRoutes } from './routes/usage.js';
import { whoamiRoutes } from './routes/whoami.js';
import { workerRoutes } from './routes/workers.js';
// Upgrade requests pass the auth hook (Authorization header or ?token=, viewer role by default).
import { endRefusedUpgrade, wsPlugin, type WsLimits } from './ws/plugin.js';

export const API_PREFIX = '/api/v1';
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface BuildAppOptions {
  readonly organism: Organism;
  readonly auth: AuthSettings;
  /** Request and error logs; false or omitted: silent. */
  readonly logger?: Logger | false;
  /** The levels of per-request lines (see request-log.ts): successful requests at debug, slow ones at warn. */
  readonly requestLog?: RequestLogSettings;
  readonly version: string;
  readonly onStop?: () => void;
  readonly onRestart?: () => void;
  readonly reloadConfig?: () => Promise<LoadedOrganism>;
  /** Resolves the tokens of a reloaded configuration (the CLI reads them from env). */
  readonly resolveTokens?: ServiceContext['resolveTokens'];
  /** Largest accepted request body in bytes (default 1 MiB; larger is 413). */
  readonly bodyLimit?: number;
  /** WebSocket connection limits, buffers and heartbeat. */
  readonly ws?: Partial<WsLimits>;
  /** The built operator console (its index.html and assets), served at `/`; omitted: no console. */
  readonly consoleDir?: string;
  /** GET /metrics; default: as organism.yaml says (`metrics.enabled`, on unless set false). */
  readonly metrics?: boolean;
  /** OpenTelemetry: HTTP server spans on this provider (the organism's tracing); probes and scrapes only with traceProbes. */
  readonly tracing?: HttpTracingOptions;
  /** The serving process's shutdown state (omitted: always serving). */
  readonly closing?: () => Closing | null;
}

/** A server on its way out: still draining the organism, or drained (storage closed). */
export interface Closing {
  readonly drained: boolean;
  readonly restart: boolean;
}

/**
 * The operator control service: REST under /api/v1, /health, the OpenAPI document and the
 * WebSocket channels, on a Fastify instance that is ready but not listening (the caller listens).
 */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger, logController: new RequestLog(options.requestLog), childLoggerFactory: lazyRequestLogger } : { logger: false }),
    bodyLimit,
    // Closing the app ends keep-alive and upgrade-refused connections too (the organism has
    // already drained by then), so shutdown and restart never hang on an idle client.
    forceCloseConnections: true,
    // removeAdditional off: a body key the route does not take (a misspelt or unsupported field,
    // `"budget": 100` on /inject) is refused by name, never silently dropped (Fastify's default).
    ajv: { customOptions: { allErrors: true, removeAdditional: false } },
    // Malformed URLs (bad percent-encoding) are the client's fault: same error body as everything else.
    frameworkErrors: (err, request, reply) => {
      sendError(reply, toOrganismError(err, request, bodyLimit).error);
    },
    // Requests Node's HTTP parser refuses get the same error body too (see http-refusals.ts).
    clientErrorHandler: answerClientError,
    http: { requireHostHeader: false },
    // One response serializer per schema object (see serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const base = app as unknown as FastifyInstance;

  const hooks = {
    organism: options.organism,
    ...(options.reloadConfig ? { reloadConfig: options.reloadConfig } : {}),
    ...(options.resolveTokens ? { resolveTokens: options.resolveTokens } : {}),
  };
  // setAuthTokens is decorated by registerAuth below, before any reload can run.
  const reloader = new Reloader(hooks, (tokens) => base.setAuthTokens(tokens));
  const ctx: ServiceContext = {
    ...hooks,
    version: options.version,
    ...(options.onStop ? { onStop: options.onStop } : {}),
    ...(options.onRestart ? { onRestart: options.onRestart } : {}),
    reloader,
  };
  base.decorate('reloadOrganism', (reloadOptions?: ReloadOptions) => reloader.run(reloadOptions));

  if (options.tracing) await registerTracing(base, options.tracing);
  registerRouteConfig(base);
  registerErrorHandling(base, bodyLimit);
  registerHttpRefusals(base);
  registerJsonParser(base, bodyLimit);
  const authorize = registerAuth(base, options.auth);
  registerRequestChecks(base, authorize, options.closing);
  const metricsConfig = options.organism.config.metrics;
  if (options.metrics ?? metricsConfig?.enabled ?? true) registerMetrics(base, { organism: options.organism, public: metricsConfig?.public ?? false });
  registerQueryCheck(base);
  await app.register(swagger, openApiOptions(options.version));

  await app.register(healthRoutes, ctx);
  // Interop (issue 31): exposed listeners as A2A agents.
  await app.register(a2aRoutes, ctx);
  // ... and as MCP tools at /mcp.
  await app.register(mcpRoutes, ctx);
  await app.register(
    async (api) => {
      await api.register(organismRoutes, ctx);
      await api.register(capabilityRoutes, ctx);
      await api.register(agentRoutes, ctx);
      await api.register(threadRoutes, ctx);
      await api.register(messageRoutes, ctx);
      await api.register(injectRoutes, ctx);
      await api.register(usageRoutes, ctx);
      await api.register(journalRoutes, ctx);
      await api.register(inboxRoutes, ctx);
      await api.register(llmCallRoutes, ctx);
      await api.register(waterfallRoutes, ctx);
      await api.register(whoamiRoutes, ctx);
      await api.register(workerRoutes, ctx);
      await api.register(interopRoutes, ctx);
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: API_PREFIX },
  );
  await app.register(wsPlugin, { organism: options.organism, version: options.version, ...(options.ws ? { limits: options.ws } : {}) });
  if (options.consoleDir) await registerConsole(base, options.consoleDir);

  await app.ready();
  return base;
}

/**
 * The service's checks of every request, in one callback hook (each hook Fastify runs is a
 * step of every request, an async one a promise too, and each stage a runner of its own:
 * bench/tools/wrk-http.ts). onRequest, in order:
 * - an upgrade request answered over HTTP has its socket ended afterwards (ws/plugin.ts);
 * - a missing Host is refused (http-refusals.ts);
 * - while the process drains, no connection is kept alive (the client's next request opens a
 *   new one, which reaches the next server process); once drained, every request is a 503 to retry;
 * - auth (auth.ts): request.principal, or the 401/403;
 * - on a route that takes no body: snake_case keys renamed (casing.ts), then the strict query
 *   check (query-check.ts). A route that takes a body runs them at preValidation, its own hook.
 */
function registerRequestChecks(app: FastifyInstance, authorize: (request: FastifyRequest, reply: FastifyReply) => void, closing?: () => Closing | null): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.upgrade !== undefined) endRefusedUpgrade(request, reply);
    if (refuseMissingHost(request, reply)) return;
    const state = closing?.() ?? null;
    if (state) {
      reply.header('connection', 'close');
      // Answered here: the request goes no further (done is not called).
      if (state.drained) return void sendError(reply, Errors.SERVER_CLOSING(state.restart ? 'restarting' : 'stopping'));
    }
    try {
      authorize(request, reply);
    } catch (err) {
      return done(err as Error);
    }
    const problem = earlyRequestCheck(request);
    if (problem) return done(problem);
    done();
  });
}
