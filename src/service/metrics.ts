import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, type Metric } from 'prom-client';
import type { Organism } from '../organism/organism.js';
import { OrganismMetrics } from '../telemetry/metrics.js';
import { type DurationSeries, HttpDurations } from './http-durations.js';
import { routeConfig, type RouteConfig } from './route-config.js';

export interface MetricsRouteOptions {
  readonly organism: Organism;
  /** `metrics.public: true`: no token needed (for setups that protect /metrics otherwise). */
  readonly public: boolean;
}

/**
 * GET /metrics (Prometheus text format) with the runtime's families, plus the service's own:
 * HTTP request durations by route pattern and the WebSocket clients. Registered on the root
 * instance so its hook sees every route. Returns the metrics, to detach when the app closes.
 */
export function registerMetrics(app: FastifyInstance, options: MetricsRouteOptions): OrganismMetrics {
  const metrics = new OrganismMetrics(options.organism);
  const registers = [metrics.registry];

  const httpDuration = new HttpDurations();
  metrics.registry.registerMetric(httpDuration as unknown as Metric);
  // One series per (method, route, status), bounded like the labels: routes are the route
  // table's. Found by the route's config object and the status (no key string per request)
  // when the request's method is the route's one; by a key string otherwise (unmatched URLs,
  // routes of several methods).
  const byRoute = new WeakMap<RouteConfig, Map<number, DurationSeries>>();
  const byKey = new Map<string, DurationSeries>();
  app.addHook('onResponse', (request, reply, done) => {
    const config = routeConfig(request);
    const status = reply.statusCode;
    let series: DurationSeries | undefined;
    if (config.url !== undefined && config.method === request.method) {
      let statuses = byRoute.get(config);
      if (!statuses) byRoute.set(config, (statuses = new Map()));
      series = statuses.get(status);
      if (!series) statuses.set(status, (series = httpDuration.series(request.method, config.url, status)));
    } else {
      // Unmatched URLs share one label value: a scanner must not grow the label set.
      const route = config.url ?? '(unmatched)';
      const key = `${request.method} ${status} ${route}`;
      series = byKey.get(key);
      if (!series) byKey.set(key, (series = httpDuration.series(request.method, route, status)));
    }
    series.observe(reply.elapsedTime / 1000);
    done();
  });

  const wsStats = () => (app.hasDecorator('wsStats') ? app.wsStats() : null);
  new Gauge({
    name: 'organism_ws_clients',
    help: 'Connected WebSocket clients, by channel (control = /ws, messages = /ws/messages).',
    labelNames: ['channel'],
    registers,
    collect() {
      const stats = wsStats();
      if (!stats) return;
      for (const [channel, n] of Object.entries(stats.clients)) this.set({ channel }, n);
    },
  });
  // The hub keeps plain totals; the counters catch up with them when scraped.
  const counted = new Map<string, number>();
  const catchUp = (counter: Counter<'reason'>, key: string, reason: string, total: number) => {
    const delta = total - (counted.get(key) ?? 0);
    if (delta > 0) counter.inc({ reason }, delta);
    counted.set(key, total);
  };
  new Counter({
    name: 'organism_ws_dropped_total',
    help: 'WebSocket connections the server dropped or refused, by reason (too_slow, unresponsive; upgrades refused before the handshake: too_many_connections, too_many_from_ip, too_many_handshakes).',
    labelNames: ['reason'],
    registers,
    collect() {
      const stats = wsStats();
      if (stats) for (const [reason, n] of stats.connectionsDropped) catchUp(this, `conn:${reason}`, reason, n);
    },
  });
  new Counter({
    name: 'organism_ws_frames_dropped_total',
    help: 'Event frames not sent to a backed-up WebSocket client (it resyncs from a snapshot once drained).',
    labelNames: ['reason'],
    registers,
    collect() {
      const stats = wsStats();
      if (stats) catchUp(this, 'frames', 'client_lagging', stats.framesDropped);
    },
  });

  app.get('/metrics', { schema: { hide: true }, config: { access: options.public ? 'public' : 'viewer' } }, async (_request, reply) => {
    reply.header('content-type', metrics.contentType);
    return metrics.text();
  });
  app.addHook('onClose', async () => metrics.detach());
  return metrics;
}
