import type { Span, TracerProvider } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatTraceparent } from '../telemetry/settings.js';
import { redactUrl } from '../util/redact.js';
import { routeConfig } from './route-config.js';

export interface HttpTracingOptions {
  readonly provider: TracerProvider;
  /** Trace `GET /health` and `GET /metrics` too (`telemetry.trace_probes`); default off. */
  readonly traceProbes?: boolean;
}

/**
 * Routes polled by machines every few seconds (load balancers, supervisors, Prometheus): one
 * trace per probe would bury the traces anyone looks for, and says nothing the metrics do not.
 */
export const PROBE_ROUTES: readonly string[] = ['/health', '/metrics'];

/**
 * The OpenTelemetry HTTP semantic conventions' span name: `{method} {route}` with the route
 * template (`GET /api/v1/threads/:threadId`, never the raw URL: ids would make every name
 * unique), or the method alone when no route matched.
 */
export function httpSpanName(method: string, route: string | undefined): string {
  return route ? `${method} ${route}` : method;
}

/**
 * HTTP server spans for the control API through @fastify/otel, on the organism's tracer
 * provider: one SERVER span per request (method, route pattern, status), named by route.
 * Registered before the routes so it sees them all; an inject made inside a request links the
 * thread's root delivery span to the request's span, which the route takes from the request
 * (callerTraceContext: no context manager needed, a body read in later packets included:
 * tested). Hook spans and the per-route handler span are left out: they would double or triple
 * the spans of a request for what its SERVER span already times, and span creation plus OTLP
 * serialization are most of what tracing costs a cheap request (profiled on the bench's
 * GET /api/v1/agents). Probes and scrapes (PROBE_ROUTES) get no span unless asked for.
 */
export async function registerTracing(app: FastifyInstance, options: HttpTracingOptions): Promise<void> {
  // Loaded only when tracing is on (it pulls in the OpenTelemetry instrumentation packages).
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    instrumentHandler: false,
    ...(options.traceProbes ? {} : { ignorePaths: (route: { url?: string }) => route.url !== undefined && PROBE_ROUTES.includes(route.url) }),
    requestHook: (span, request) => {
      // @fastify/otel names every span `request`; the route is known by now.
      span.updateName(httpSpanName(request.method, routeConfig(request).url));
      // url.path is the URL as sent, query included: a `?token=` (the browser form of WebSocket
      // auth) is redacted there as in the logs. Set once the span starts, so it holds whenever it ends.
      const redacted = redactUrl(request.url);
      if (redacted !== request.url) span.setAttribute('url.path', redacted);
    },
  });
  instrumentation.setTracerProvider(options.provider);
  await app.register(instrumentation.plugin());
}

/**
 * The W3C traceparent of the request's SERVER span (@fastify/otel's request decoration), for
 * an inject to carry; undefined when tracing is off (the decoration is absent) or the route is
 * not instrumented.
 */
export function callerTraceContext(request: FastifyRequest): string | undefined {
  const otel = (request as { opentelemetry?: () => { span: Span | null } }).opentelemetry;
  if (typeof otel !== 'function') return undefined;
  const span = otel.call(request).span;
  return span ? (formatTraceparent(span.spanContext()) ?? undefined) : undefined;
}
