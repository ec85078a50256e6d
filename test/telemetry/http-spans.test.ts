import { afterEach, describe, expect, it } from 'vitest';
import { httpSpanName } from '../../src/service/tracing.js';
import { OrganismTracing, resolveTracing, tracesDestination } from '../../src/telemetry/tracing.js';
import { eventually, startService, type Service } from '../service/fixture.js';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A service whose HTTP spans go to a local OTLP receiver. */
async function traced(traceProbes?: boolean): Promise<{ svc: Service; receiver: OtlpReceiver; tracing: OrganismTracing }> {
  const receiver = await startOtlpReceiver();
  cleanups.push(() => receiver.close());
  const tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: receiver.url, protocol: 'http/json' }, captureContent: false }, { name: 'spans', version: '1' }, {})!);
  cleanups.push(() => tracing.shutdown());
  const svc = await startService({ app: { tracing: { provider: tracing.provider, ...(traceProbes !== undefined ? { traceProbes } : {}) } } });
  cleanups.push(() => svc.close());
  return { svc, receiver, tracing };
}

/** The requests of an operator's session and a monitoring system's polling, then the spans they made. */
async function session(svc: Service, receiver: OtlpReceiver, tracing: OrganismTracing) {
  for (let i = 0; i < 3; i++) {
    expect((await svc.request('GET', '/health', { token: null })).status).toBe(200);
    expect((await svc.request('GET', '/metrics')).status).toBe(200);
  }
  expect((await svc.request('GET', '/api/v1/agents')).status).toBe(200);
  expect((await svc.request('GET', '/api/v1/threads/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  expect((await svc.request('GET', '/api/v1/no/such/route')).status).toBe(404);
  // The last request's span is among those exported: every earlier one ended before it.
  await tracing.flush();
  return eventually(() => (receiver.spans.some((s) => s.attributes['url.path'] === '/api/v1/no/such/route') ? receiver.spans : null), 'the request spans');
}

describe('HTTP server spans', () => {
  it('are named `{method} {route}` (the OpenTelemetry HTTP convention), the method alone when no route matched', async () => {
    expect(httpSpanName('GET', '/api/v1/threads/:threadId')).toBe('GET /api/v1/threads/:threadId');
    expect(httpSpanName('POST', undefined)).toBe('POST');
    const { svc, receiver, tracing } = await traced();
    const spans = await session(svc, receiver, tracing);
    const names = spans.filter((s) => s.kind === 2).map((s) => s.name);
    expect(names).toContain('GET /api/v1/agents');
    const thread = spans.find((s) => s.name === 'GET /api/v1/threads/:threadId');
    expect(thread?.attributes).toMatchObject({ 'http.route': '/api/v1/threads/:threadId', 'http.response.status_code': 404 });
    expect(spans.find((s) => s.attributes['url.path'] === '/api/v1/no/such/route')?.name).toBe('GET');
    expect(names).not.toContain('request');
  });

  it('leave /health probes and /metrics scrapes untraced by default', async () => {
    const { svc, receiver, tracing } = await traced();
    const spans = await session(svc, receiver, tracing);
    expect(spans.filter((s) => s.attributes['http.route'] === '/health' || s.attributes['http.route'] === '/metrics')).toEqual([]);
    // The other requests of the session were traced (so the absence above is not an empty export).
    for (const path of ['/api/v1/agents', '/api/v1/threads/00000000-0000-4000-8000-000000000000', '/api/v1/no/such/route']) {
      expect(spans.filter((s) => s.attributes['url.path'] === path)).toHaveLength(1);
    }
  });

  it('trace probes and scrapes too with telemetry.trace_probes', async () => {
    const { svc, receiver, tracing } = await traced(true);
    const spans = await session(svc, receiver, tracing);
    expect(spans.filter((s) => s.name === 'GET /health')).toHaveLength(3);
    expect(spans.filter((s) => s.name === 'GET /metrics')).toHaveLength(3);
  });
});

describe('where traces go, as the serve banner says it', () => {
  it('the configured URL, else what the standard variables name; never credentials', () => {
    const org = { name: 'org', version: '1' };
    const yaml = resolveTracing({ otlp: { endpoint: 'http://user:secret@collector:4318', protocol: null }, captureContent: false }, org, {})!;
    expect(tracesDestination(yaml, {})).toBe('http://collector:4318/v1/traces');
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318/' };
    expect(tracesDestination(resolveTracing(undefined, org, env)!, env)).toBe('http://env:4318/v1/traces');
    const traces = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otel.example/custom/traces' };
    expect(tracesDestination(resolveTracing(undefined, org, traces)!, traces)).toBe('https://otel.example/custom/traces');
  });
});
