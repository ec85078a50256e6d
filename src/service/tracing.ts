import type { TracerProvider } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';

/**
 * HTTP server spans for the control API through @fastify/otel, on the organism's tracer
 * provider. Registered before the routes so it sees them all; an inject made inside a request
 * links the thread's root delivery span to the request's span. Hook spans are left out: a span
 * per hook per request would outnumber the work they describe.
 */
export async function registerTracing(app: FastifyInstance, provider: TracerProvider): Promise<void> {
  // Loaded only when tracing is on (it pulls in the OpenTelemetry instrumentation packages).
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const instrumentation = new FastifyOtelInstrumentation({ instrumentHooks: false });
  instrumentation.setTracerProvider(provider);
  await app.register(instrumentation.plugin());
}
