import { Histogram, type Metric, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HTTP_DURATION_BUCKETS, HttpDurations } from '../../src/service/http-durations.js';

/** The same observations through prom-client's own Histogram and through HttpDurations. */
function both(observations: ReadonlyArray<[method: string, route: string, status: number, seconds: number]>) {
  const theirs = new Registry();
  const histogram = new Histogram({
    name: 'organism_http_request_duration_seconds',
    help: 'Control API request durations, by method, route pattern (never the raw URL) and status code.',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [...HTTP_DURATION_BUCKETS],
    registers: [theirs],
  });
  const ours = new Registry();
  const durations = new HttpDurations();
  ours.registerMetric(durations as unknown as Metric);
  const series = new Map<string, ReturnType<HttpDurations['series']>>();
  for (const [method, route, status, seconds] of observations) {
    histogram.observe({ method, route, status_code: String(status) }, seconds);
    const key = `${method} ${route} ${status}`;
    if (!series.has(key)) series.set(key, durations.series(method, route, status));
    series.get(key)!.observe(seconds);
  }
  return { theirs, ours, durations };
}

// Values on a bucket bound, between bounds, below the first and above the last (+Inf only).
const OBSERVATIONS: Array<[string, string, number, number]> = [
  ['GET', '/api/v1/agents', 200, 0.0001],
  ['GET', '/api/v1/agents', 200, 0.0005],
  ['GET', '/api/v1/agents', 200, 0.0007],
  ['GET', '/api/v1/agents', 200, 0.25],
  ['GET', '/api/v1/agents', 200, 42],
  ['GET', '(unmatched)', 404, 0.003],
  ['POST', '/api/v1/inject', 200, 0.01],
  ['GET', '/api/v1/threads/:threadId', 400, 1],
];

describe('organism_http_request_duration_seconds counted in plain numbers (HttpDurations)', () => {
  it('writes the same Prometheus text as prom-client’s Histogram fed the same observations', async () => {
    const { theirs, ours } = both(OBSERVATIONS);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('gives the same JSON as prom-client’s Histogram (every label on each value)', async () => {
    const { theirs, ours } = both(OBSERVATIONS);
    const strip = (metrics: Array<{ values: unknown[] }>) => metrics.map((m) => ({ ...m, values: m.values.map((v) => ({ ...(v as object), exemplar: undefined })) }));
    expect(strip((await ours.getMetricsAsJSON()) as never)).toEqual(strip((await theirs.getMetricsAsJSON()) as never));
  });

  it('is zeroed by the registry’s resetMetrics, series kept', async () => {
    const { ours, durations } = both(OBSERVATIONS);
    ours.resetMetrics();
    const text = await ours.metrics();
    expect(text).toContain('organism_http_request_duration_seconds_count{method="GET",route="/api/v1/agents",status_code="200"} 0');
    expect(text).not.toMatch(/_count\{[^}]*\} [1-9]/);
    durations.series('GET', '/health', 200).observe(0.002);
    expect(await ours.metrics()).toContain('organism_http_request_duration_seconds_bucket{le="0.0025",method="GET",route="/health",status_code="200"} 1');
  });
});
