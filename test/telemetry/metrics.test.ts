import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { OrganismMetrics } from '../../src/telemetry/metrics.js';
import { eventually, OPERATOR, organismYaml, startService, VIEWER } from '../service/fixture.js';
import { parseMetrics } from './fake-llm.js';
import { runWorkload, TEST_HANDLERS, type Workload } from './workload.js';

const FAMILIES = [
  'organism_deliveries_total',
  'organism_delivery_failures_total',
  'organism_delivery_duration_seconds',
  'organism_queue_depth',
  'organism_in_flight',
  'organism_listener_paused',
  'organism_journal_entries',
  'organism_journal_oldest_pending_age_seconds',
  'organism_recovered_messages_total',
  'organism_threads_active',
  'organism_threads_total',
  'organism_peer_denials_total',
  'organism_budget_warnings_total',
  'organism_budget_exhaustions_total',
  'gen_ai_client_token_usage',
  'gen_ai_client_operation_duration_seconds',
  'organism_llm_cost_usd_total',
  'organism_llm_unpriced_requests_total',
  'organism_llm_retries_total',
  'organism_ws_clients',
  'organism_ws_dropped_total',
  'organism_http_request_duration_seconds',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  'nodejs_heap_size_used_bytes',
  'nodejs_eventloop_lag_seconds',
];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

async function scrape(url: string, token: string | null = VIEWER): Promise<Response> {
  return fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
}

describe('GET /metrics after a scripted workload', () => {
  let w: Workload;
  let text: string;
  let samples: Map<string, number>;

  beforeAll(async () => {
    w = await runWorkload();
    const res = await scrape(w.service.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    text = await res.text();
    samples = parseMetrics(text);
  }, 120_000);
  afterAll(async () => w?.close());

  const value = (name: string, labels: Record<string, string> = {}) => {
    const key = Object.keys(labels).length
      ? `${name}{${Object.entries(labels)
          .map(([k, v]) => `${k}="${v}"`)
          .sort()
          .join(',')}}`
      : name;
    return samples.get(key);
  };

  it('has every family of the issue, with its type', () => {
    for (const family of FAMILIES) expect(text, family).toMatch(new RegExp(`^# TYPE ${family} `, 'm'));
    expect(text).toMatch(/^# TYPE organism_delivery_duration_seconds histogram$/m);
    expect(text).toMatch(/^# TYPE gen_ai_client_token_usage histogram$/m);
    expect(text).toMatch(/^# TYPE organism_queue_depth gauge$/m);
    expect(text).toMatch(/^# TYPE organism_deliveries_total counter$/m);
  });

  it('counts deliveries by listener and outcome, and failures by the journal reason', () => {
    // echo x2; greeter and freeloader each send one to shouter; rogue's handler runs once and
    // its refused message brings it a SystemError (a delivery too); spender's call crosses
    // 75/90/95 % (three BudgetWarning deliveries); spender2 finds the budget gone and gets the
    // SystemError about it.
    const expected: Array<[string, string, number]> = [
      ['echo', 'acked', 2],
      ['broken', 'failed', 1],
      ['greeter', 'acked', 1],
      ['freeloader', 'acked', 1],
      ['shouter', 'acked', 2],
      ['rogue', 'acked', 2],
      ['spender', 'acked', 4],
      ['spender2', 'failed', 1],
      ['spender2', 'acked', 1],
      ['doomed', 'failed', 1],
    ];
    for (const [listener, outcome, n] of expected) expect(value('organism_deliveries_total', { listener, outcome }), `${listener} ${outcome}`).toBe(n);
    expect([...samples.keys()].filter((k) => k.startsWith('organism_deliveries_total{')).length).toBe(expected.length);
    expect(value('organism_delivery_failures_total', { listener: 'broken', reason: 'handler_error' })).toBe(1);
    expect(value('organism_delivery_failures_total', { listener: 'doomed', reason: 'handler_error' })).toBe(1);
    expect(value('organism_delivery_failures_total', { listener: 'spender2', reason: 'budget_exhausted' })).toBe(1);
    expect(value('organism_delivery_failures_total', { listener: 'echo', reason: 'peer_denied' })).toBe(1);
    for (const [listener, ,] of expected) expect(value('organism_delivery_duration_seconds_count', { listener })).toBeGreaterThan(0);
    expect(value('organism_delivery_duration_seconds_count', { listener: 'spender' })).toBe(4);
    expect(value('organism_delivery_duration_seconds_sum', { listener: 'echo' })).toBeGreaterThan(0);
    expect(value('organism_delivery_duration_seconds_bucket', { listener: 'echo', le: '+Inf' })).toBe(2);
  });

  it('reports queues, in-flight work and paused listeners', () => {
    expect(value('organism_queue_depth', { listener: 'slow' })).toBe(1);
    expect(value('organism_queue_depth', { listener: 'echo' })).toBe(0);
    expect(value('organism_listener_paused', { listener: 'slow' })).toBe(1);
    expect(value('organism_listener_paused', { listener: 'echo' })).toBe(0);
    expect(value('organism_in_flight', { listener: 'slow' })).toBe(0);
  });

  it('reports the journal from its kept counts, equal to a count of its rows', async () => {
    const stats = await w.service.organism.storage.journal.stats();
    expect(stats.counts).toEqual({ PENDING: 1, DISPATCHED: 0, AWAITING: 0, ACKED: 15, FAILED: 4 });
    for (const state of ['PENDING', 'DISPATCHED', 'ACKED', 'FAILED'] as const) {
      expect(value('organism_journal_entries', { state }), state).toBe(stats.counts[state]);
    }
    expect(value('organism_journal_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(value('organism_journal_oldest_pending_age_seconds')).toBeLessThan(60);
    for (const kind of ['pending', 'redelivered', 'failed']) expect(value('organism_recovered_messages_total', { kind })).toBe(0);
  });

  it('counts threads, peer denials and budget events', () => {
    expect(value('organism_threads_active')).toBe(1);
    expect(value('organism_threads_total', { status: 'active' })).toBe(9);
    expect(value('organism_threads_total', { status: 'completed' })).toBe(4);
    expect(value('organism_threads_total', { status: 'error' })).toBe(4);
    expect(value('organism_peer_denials_total', { listener: 'rogue' })).toBe(1);
    for (const threshold of ['75', '90', '95']) expect(value('organism_budget_warnings_total', { threshold })).toBe(1);
    expect(value('organism_budget_exhaustions_total')).toBe(1);
  });

  it('has the LLM families per the GenAI conventions', () => {
    const spender = { gen_ai_request_model: 'fake-big', gen_ai_agent_name: 'spender', gen_ai_provider_name: 'fake' };
    expect(value('gen_ai_client_token_usage_sum', { ...spender, gen_ai_token_type: 'input' })).toBe(4190);
    expect(value('gen_ai_client_token_usage_sum', { ...spender, gen_ai_token_type: 'output' })).toBe(800);
    expect(value('gen_ai_client_token_usage_sum', { ...spender, gen_ai_token_type: 'cache_read' })).toBe(100);
    expect(value('gen_ai_client_token_usage_sum', { ...spender, gen_ai_token_type: 'reasoning' })).toBe(20);
    expect(value('gen_ai_client_token_usage_count', { ...spender, gen_ai_token_type: 'input' })).toBe(1);
    // Not reported by the provider: no sample rather than a made-up 0.
    expect(value('gen_ai_client_token_usage_count', { ...spender, gen_ai_token_type: 'cache_creation' })).toBeUndefined();
    expect(value('gen_ai_client_operation_duration_seconds_count', { ...spender, gen_ai_operation_name: 'chat' })).toBe(1);
    expect(
      value('gen_ai_client_operation_duration_seconds_count', {
        gen_ai_request_model: 'fake-bad',
        gen_ai_agent_name: 'doomed',
        gen_ai_operation_name: 'chat',
        error_type: 'LLM_REQUEST_FAILED',
      }),
    ).toBe(1);
    // fake-big: 4190 * $1/M + 800 * $2/M
    expect(value('organism_llm_cost_usd_total', { agent: 'spender', model: 'fake-big' })).toBeCloseTo(0.00579, 9);
    expect(value('organism_llm_cost_usd_total', { agent: 'greeter', model: 'mock-small' })).toBeGreaterThan(0);
    expect(value('organism_llm_unpriced_requests_total', { model: 'mock-free' })).toBe(1);
    expect(value('organism_llm_retries_total', { provider: 'fake', reason: 'http_500' })).toBe(1);
  });

  it('has HTTP durations by route pattern and the WebSocket clients', () => {
    expect(value('organism_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/inject', status_code: '200' })).toBe(9);
    expect(value('organism_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/agents/:name/pause', status_code: '200' })).toBe(1);
    expect(value('organism_ws_clients', { channel: 'control' })).toBe(1);
    expect(value('organism_ws_clients', { channel: 'messages' })).toBe(0);
  });

  it('never carries a thread id, message id or payload in a label', async () => {
    expect(text).not.toMatch(UUID);
    expect(text).not.toContain('Ada');
    expect(text).not.toContain('sneaky');
    // Unmatched URLs share one label value.
    await fetch(`${w.service.url}/no/such/${'x'.repeat(8)}`);
    const after = await (await scrape(w.service.url)).text();
    expect(after).toContain('route="(unmatched)"');
    expect(after).not.toContain('xxxxxxxx');
  });

  it('the Grafana dashboard in docs/ queries only metrics that /metrics exposes', () => {
    const dashboard = JSON.parse(readFileSync(path.resolve('docs/grafana/organism-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const families = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)];
    const exposed = new Set(families.flatMap(([, name, type]) => (type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!])));
    const used = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => [...t.expr.matchAll(/\b((?:organism|gen_ai|process|nodejs)_[a-z0-9_]+)\{/g)].map((m) => m[1]!))));
    expect(used.size).toBeGreaterThan(15);
    for (const name of used) expect(exposed.has(name), name).toBe(true);
  });

  it('passes promtool check metrics', () => {
    const which = spawnSync('which', ['promtool']);
    expect(which.status, 'promtool is installed (Debian package prometheus; .ci/run installs it)').toBe(0);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.stderr + check.stdout).toBe('');
    expect(check.status).toBe(0);
  });

  it('is scraped by a real Prometheus server with a bearer token and answers PromQL', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'organism-prometheus-'));
    const port = await freePort();
    const target = new URL(w.service.url).host;
    writeFileSync(
      path.join(dir, 'prometheus.yml'),
      `global:
  scrape_interval: 1s
scrape_configs:
  - job_name: organism
    authorization:
      credentials: ${VIEWER}
    static_configs:
      - targets: ['${target}']
`,
    );
    const server = spawn('prometheus', [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: 'ignore',
    });
    try {
      const query = encodeURIComponent('sum(organism_deliveries_total{listener="echo",outcome="acked"})');
      const result = await eventually(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${query}`).catch(() => null);
          if (!res?.ok) return null;
          const body = (await res.json()) as { data: { result: Array<{ value: [number, string] }> } };
          return body.data.result[0]?.value[1] ?? null;
        },
        'Prometheus to scrape /metrics',
        90_000,
      );
      expect(result).toBe('2');
      const up = await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('up{job="organism"}')}`)).json();
      expect((up as { data: { result: Array<{ value: [number, string] }> } }).data.result[0]?.value[1]).toBe('1');
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('who may read /metrics', () => {
  it('asks for a viewer or operator token', async () => {
    const s = await startService();
    try {
      const anonymous = await scrape(s.url, null);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect((await scrape(s.url, 'wrong-token-0123456789')).status).toBe(401);
      expect((await scrape(s.url, VIEWER)).status).toBe(200);
      expect((await scrape(s.url, OPERATOR)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('is open with metrics.public: true, and absent with metrics.enabled: false', async () => {
    const open = await startService({ yaml: `${organismYaml()}metrics:\n  public: true\n` });
    try {
      const res = await scrape(open.url, null);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('organism_threads_active 0');
    } finally {
      await open.close();
    }
    const off = await startService({ yaml: `${organismYaml()}metrics:\n  enabled: false\n` });
    try {
      expect((await scrape(off.url, VIEWER)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe('metrics across a restart', () => {
  it('counts what recovery found, and keeps unknown listener names out of labels', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'organism-metrics-restart-'));
    const yaml = `organism:
  name: restart-metrics
payloads:
  Text:
    fields:
      text: string
listeners:
  - name: holder
    payload: Text
    handler: ${TEST_HANDLERS}#hold
  - name: stray
    payload: Text
    handler: ${TEST_HANDLERS}#stray
`;
    const configPath = path.join(dir, 'organism.yaml');
    const boot = async () => {
      const loaded = await loadOrganismFromString(yaml, configPath);
      const organism = new Organism(loaded, { storage: openSqliteStorage({ dataDir: path.join(dir, 'data') }) });
      const metrics = new OrganismMetrics(organism);
      await organism.start();
      return { organism, metrics };
    };
    try {
      const first = await boot();
      await first.organism.inject('holder', { Text: { text: 'held' } });
      await first.organism.inject('stray', { Text: { text: 'a1b2c3' } });
      await eventually(() => first.organism.agents().find((a) => a.name === 'holder')?.inFlight === 1 && first.organism.activeThreads === 1, 'the hold');
      const before = parseMetrics(await first.metrics.text());
      expect(before.get('organism_delivery_failures_total{listener="_other",reason="peer_denied"}')).toBe(1);
      expect(await first.metrics.text()).not.toContain('a1b2c3');
      expect(before.get('organism_journal_entries{state="DISPATCHED"}')).toBe(1);
      // Stopped mid-delivery: the entry stays DISPATCHED, not counted as ended.
      await first.organism.stop({ timeoutMs: 50 });
      expect(parseMetrics(await first.metrics.text()).get('organism_deliveries_total{listener="holder",outcome="failed"}')).toBeUndefined();
      first.metrics.detach();

      const second = await boot();
      const after = parseMetrics(await second.metrics.text());
      expect(after.get('organism_recovered_messages_total{kind="redelivered"}')).toBe(1);
      expect(after.get('organism_recovered_messages_total{kind="pending"}')).toBe(0);
      expect(after.get('organism_recovered_messages_total{kind="failed"}')).toBe(0);
      // Counted once per boot, however often it is scraped.
      expect(parseMetrics(await second.metrics.text()).get('organism_recovered_messages_total{kind="redelivered"}')).toBe(1);
      await eventually(async () => parseMetrics(await second.metrics.text()).get('organism_in_flight{listener="holder"}') === 1, 'the redelivery');
      await second.organism.stop({ timeoutMs: 50 });
      second.metrics.detach();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
