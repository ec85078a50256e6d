import { request } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { buildApp } from '../../src/service/app.js';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, defaultTextMapSetter, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { formatTraceparent, OrganismTracing, parseTraceparent, resolveTracing, traceIdOfThread, traceLogFields, type OtlpProtocol } from '../../src/telemetry/tracing.js';
import { eventually } from '../service/fixture.js';
import { startFakeLlm, type FakeLlm } from './fake-llm.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
import { TEST_HANDLERS } from './workload.js';

const TOKEN = 'trace-operator-token-0123456789';

function traceYaml(fakeUrl: string): string {
  return `organism:
  name: trace-test
max_tokens_per_thread: 5000
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      reply_format: xml # the captured completion is the scripted text
      script:
        greeter:
          - '<send to="shouter"><Text><text>Hello, {{name}}!</text></Text></send>'
    - name: fake
      type: openai
      base_url: ${fakeUrl}
      models: [fake-]
      reply_format: xml # the fake server answers in XML text
  pricing:
    mock-small: {prompt: 0.5, completion: 1.5}
    fake-big: {prompt: 1, completion: 2}
payloads:
  Text:
    fields:
      text: string
  Greeting:
    fields:
      name: string
listeners:
  - name: hop1
    payload: Text
    peers: [hop2]
    handler: ${TEST_HANDLERS}#relay
  - name: hop2
    payload: Text
    peers: [hop3]
    handler: ${TEST_HANDLERS}#relay
  - name: hop3
    payload: Text
    handler: ${TEST_HANDLERS}#relay
  - name: greeter
    agent: true
    peers: [shouter]
    payload: Greeting
    handler: builtin:llm
    model: mock-small
    prompt: You greet people.
  - name: shouter
    payload: Text
    handler: ${TEST_HANDLERS}#relay
  - name: rogue
    payload: Text
    peers: [shouter]
    handler: ${TEST_HANDLERS}#sneak
  - name: echo
    payload: Text
    handler: ${TEST_HANDLERS}#relay
  - name: broken
    payload: Text
    handler: ${TEST_HANDLERS}#fail
  - name: spender
    agent: true
    payload: Text
    handler: builtin:llm
    model: fake-big
    max_output_tokens: 200
    prompt: You spend.
`;
}

interface Run {
  readonly receiver: OtlpReceiver;
  readonly llm: FakeLlm;
  readonly app: FastifyInstance;
  readonly organism: Organism;
  readonly tracing: OrganismTracing;
  readonly logs: Array<Record<string, unknown>>;
  readonly threads: Record<'slow' | 'chain' | 'greet' | 'rogue' | 'broken' | 'spend', string>;
}

async function run(protocol: OtlpProtocol, captureContent: boolean): Promise<Run> {
  const receiver = await startOtlpReceiver();
  const llm = await startFakeLlm({
    'fake-big': { failFirst: 1, content: 'Spent.', usage: { prompt: 4000, completion: 100, cached: 50, reasoning: 10 } },
  });
  const loaded = await loadOrganismFromString(traceYaml(llm.url), '/tmp/trace-test/organism.yaml');
  const logs: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'info', mixin: traceLogFields }, stream);
  const organism = new Organism(loaded, { logger });
  const settings = resolveTracing({ otlp: { endpoint: receiver.url, protocol }, captureContent }, { name: 'trace-test', version: 'test' }, {})!;
  const tracing = new OrganismTracing(settings);
  tracing.attach(organism);
  await organism.start();
  const app = await buildApp({ organism, auth: { tokens: [{ name: 'ops', role: 'operator', token: TOKEN }] }, version: 'test', tracing: { provider: tracing.provider } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const inject = async (to: string, payload: unknown) => {
    const res = await fetch(`${base}/api/v1/inject`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to, payload }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { threadId: string }).threadId;
  };
  // The body arrives in two packets, after the headers: the handler runs in the socket's callbacks.
  const slowInject = (to: string, payload: unknown) =>
    new Promise<string>((resolve, reject) => {
      const body = Buffer.from(JSON.stringify({ to, payload }));
      const req = request(
        `${base}/api/v1/inject`,
        { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': body.length } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => (res.statusCode === 200 ? resolve((JSON.parse(text) as { threadId: string }).threadId) : reject(new Error(`${res.statusCode}: ${text}`))));
        },
      );
      req.on('error', reject);
      req.flushHeaders();
      setTimeout(() => req.write(body.subarray(0, 10)), 30);
      setTimeout(() => req.end(body.subarray(10)), 60);
    });
  const threads = {
    slow: await slowInject('echo', { Text: { text: 'slowly' } }),
    chain: await inject('hop1', { Text: { text: 'go' } }),
    greet: await inject('greeter', { Greeting: { name: 'Ada' } }),
    rogue: await inject('rogue', { Text: { text: 'x' } }),
    broken: await inject('broken', { Text: { text: 'x' } }),
    spend: await inject('spender', { Text: { text: 'x' } }),
  };
  await eventually(() => organism.activeThreads === 0 && organism.queued === 0, 'the threads to finish');
  // The browser form of WebSocket auth puts the operator token in the URL: a socket that opens
  // and closes, and a plain GET of the same URL (refused), each make a request span.
  const socket = new WebSocket(`${base.replace('http', 'ws')}/ws?token=${TOKEN}&events=reload`);
  await new Promise<void>((resolve, reject) => (socket.once('message', () => resolve()), socket.once('error', reject)));
  socket.close();
  await new Promise((resolve) => socket.once('close', resolve));
  expect((await fetch(`${base}/ws?events=reload&token=${TOKEN}`)).status).toBe(401);
  const mistyped = new WebSocket(`${base.replace('http', 'ws')}/ws?token=${TOKEN}x&events=reload`);
  await new Promise<void>((resolve) => mistyped.once('unexpected-response', (req) => (req.destroy(), resolve())));
  await tracing.flush();
  await eventually(() => receiver.spans.filter((s) => s.name.startsWith('execute_tool') || s.name.startsWith('invoke_agent')).length >= 10, 'the spans');
  return { receiver, llm, app, organism, tracing, logs, threads };
}

async function close(r: Run | undefined): Promise<void> {
  if (!r) return;
  await r.app.close();
  await r.organism.stop({ timeoutMs: 1_000 });
  await r.tracing.shutdown();
  await r.receiver.close();
  await r.llm.close();
}

const byName = (spans: readonly ReceivedSpan[], name: string, threadId: string, where: (s: ReceivedSpan) => boolean = () => true) => {
  const found = spans.filter((s) => s.name === name && s.attributes['gen_ai.conversation.id'] === threadId && where(s));
  expect(found, `${name} in ${threadId}`).toHaveLength(1);
  return found[0]!;
};

for (const [protocol, captureContent] of [
  ['http/protobuf', false],
  ['http/json', true],
] as const) {
  describe(`traces exported over OTLP ${protocol}${captureContent ? ' (content captured)' : ''}`, () => {
    let r: Run;
    beforeAll(async () => {
      r = await run(protocol, captureContent);
    }, 60_000);
    afterAll(async () => close(r));

    it('sends with the protocol asked for, under the organism name', () => {
      expect(r.receiver.contentTypes.length).toBeGreaterThan(0);
      for (const type of r.receiver.contentTypes) expect(type).toContain(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
      expect(new Set(r.receiver.spans.map((s) => s.serviceName))).toEqual(new Set(['trace-test']));
    });

    it('makes one trace per thread over three hops: each delivery a child of the one that sent its message', () => {
      const spans = r.receiver.spans;
      const id = r.threads.chain;
      const [h1, h2, h3] = ['hop1', 'hop2', 'hop3'].map((h) => byName(spans, `execute_tool ${h}`, id));
      const traceId = traceIdOfThread(id);
      expect(traceId).toBe(id.replace(/-/g, ''));
      for (const s of [h1!, h2!, h3!]) {
        expect(s.traceId).toBe(traceId);
        expect(s.kind).toBe(1);
        expect(s.status.code).toBe(0);
        expect(s.attributes).toMatchObject({
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.conversation.id': id,
          'organism.attempt': 1,
          'organism.payload_type': 'Text',
          'organism.outcome': 'acked',
        });
        expect(s.attributes['organism.message.id']).toMatch(/^[0-9a-f-]{36}$/);
      }
      expect(h1!.attributes['gen_ai.agent.name']).toBe('hop1');
      expect(h1!.parentSpanId).toBe('');
      expect(h2!.parentSpanId).toBe(h1!.spanId);
      expect(h3!.parentSpanId).toBe(h2!.spanId);
      expect(spans.filter((s) => s.traceId === traceId).length).toBe(3);
    });

    it('links the thread root to the HTTP server span of the inject (@fastify/otel)', () => {
      const spans = r.receiver.spans;
      const root = byName(spans, 'execute_tool hop1', r.threads.chain);
      expect(root.links).toHaveLength(1);
      const http = spans.find((s) => s.spanId === root.links[0]!.spanId);
      expect(http, 'the linked span was exported').toBeDefined();
      expect(http!.traceId).toBe(root.links[0]!.traceId);
      expect(http!.traceId).not.toBe(root.traceId);
      // The request's SERVER span itself (no span per hook or handler under it).
      expect(http!.kind).toBe(2);
      expect(http!.attributes['http.route']).toBe('/api/v1/inject');
      expect(http!.attributes['http.request.method']).toBe('POST');
      expect(http!.attributes['http.response.status_code']).toBe(200);
      expect(spans.filter((s) => s.traceId === http!.traceId)).toHaveLength(1);
    });

    it('keeps no token from a URL in any span: url.path has it redacted as the logs do', async () => {
      // The refused ones (a query token on a plain GET, a mistyped token); an upgraded socket's span may still be open.
      await eventually(() => r.receiver.spans.filter((s) => s.attributes['http.response.status_code'] === 401 && s.attributes['http.route'] === '/ws').length >= 2, 'the /ws request spans');
      const refused = r.receiver.spans.filter((s) => s.attributes['http.response.status_code'] === 401 && s.attributes['http.route'] === '/ws');
      expect(refused.map((s) => s.attributes['url.path']).sort()).toEqual(['/ws?events=reload&token=[redacted]', '/ws?token=[redacted]&events=reload']);
      for (const span of r.receiver.spans) expect(JSON.stringify(span), span.name).not.toContain(TOKEN);
    });

    it('links the root to the request span also when the body comes in packets after the headers', () => {
      const spans = r.receiver.spans;
      const root = byName(spans, 'execute_tool echo', r.threads.slow);
      expect(root.links).toHaveLength(1);
      const http = spans.find((s) => s.spanId === root.links[0]!.spanId);
      expect(http?.kind).toBe(2);
      expect(http?.attributes['http.route']).toBe('/api/v1/inject');
    });

    it('has invoke_agent and chat spans with the GenAI attributes', () => {
      const spans = r.receiver.spans;
      const id = r.threads.greet;
      const agent = byName(spans, 'invoke_agent greeter', id);
      expect(agent.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'greeter', 'organism.payload_type': 'Greeting' });
      const chat = byName(spans, 'chat mock-small', id);
      expect(chat.kind).toBe(3);
      expect(chat.parentSpanId).toBe(agent.spanId);
      expect(chat.traceId).toBe(agent.traceId);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'mock',
        'gen_ai.request.model': 'mock-small',
        'gen_ai.response.model': 'mock-small',
        'gen_ai.conversation.id': id,
      });
      expect(chat.attributes['gen_ai.request.max_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(chat.attributes['organism.cost_usd']).toBeGreaterThan(0);
      const shouter = byName(spans, 'execute_tool shouter', id);
      expect(shouter.parentSpanId).toBe(agent.spanId);
      if (captureContent) {
        expect(String(chat.attributes['gen_ai.input.messages'])).toContain('Ada');
        expect(String(chat.attributes['gen_ai.output.messages'])).toContain('Hello, Ada!');
        expect(String(chat.attributes['gen_ai.system_instructions'])).toContain('You greet people.');
      } else {
        for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions']) expect(chat.attributes[key]).toBeUndefined();
        expect(JSON.stringify(spans)).not.toContain('Ada');
      }
    });

    it('records retries, cache and reasoning tokens, and budget warnings as events', () => {
      const spans = r.receiver.spans;
      const id = r.threads.spend;
      // The agent's reply has no <send>: a second (repair) call follows; the first was retried.
      expect(spans.filter((s) => s.name === 'chat fake-big' && s.attributes['gen_ai.conversation.id'] === id)).toHaveLength(2);
      const chat = byName(spans, 'chat fake-big', id, (s) => s.events.length > 0);
      expect(chat.attributes).toMatchObject({
        'gen_ai.provider.name': 'fake',
        'gen_ai.response.model': 'fake-big-2026',
        'gen_ai.usage.input_tokens': 4000,
        'gen_ai.usage.output_tokens': 100,
        'gen_ai.usage.cache_read.input_tokens': 50,
        'gen_ai.usage.reasoning.output_tokens': 10,
      });
      expect(chat.attributes['organism.cost_usd']).toBeCloseTo(0.0042, 9);
      expect(chat.events.map((e) => e.name)).toEqual(['organism.llm.retry']);
      expect(chat.events[0]!.attributes).toMatchObject({ 'organism.llm.provider': 'fake', 'organism.llm.retry_reason': 'http_500' });
      const delivery = byName(spans, 'invoke_agent spender', id, (s) => s.attributes['organism.payload_type'] === 'Text');
      expect(delivery.events.filter((e) => e.name === 'organism.budget_warning').map((e) => e.attributes['organism.budget.threshold'])).toEqual([75, 90, 95]);
    });

    it('marks failures with status ERROR and the reason, and peer denials as events', () => {
      const spans = r.receiver.spans;
      const broken = byName(spans, 'execute_tool broken', r.threads.broken);
      expect(broken.status.code).toBe(2);
      expect(broken.status.message).toMatch(/^handler_error: /);
      expect(broken.attributes['organism.failure.reason']).toBe('handler_error');
      // Its own delivery (the SystemError telling it about the refusal is a second one).
      const rogue = byName(spans, 'execute_tool rogue', r.threads.rogue, (s) => s.attributes['organism.payload_type'] === 'Text');
      expect(byName(spans, 'execute_tool rogue', r.threads.rogue, (s) => s.attributes['organism.payload_type'] === 'SystemError').parentSpanId).toBe(rogue.spanId);
      const denied = rogue.events.find((e) => e.name === 'organism.peer_denied');
      expect(denied?.attributes['organism.peer.target']).toBe('echo');
    });

    it('installs no global context manager: the active context does not follow an await', async () => {
      const span = trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 });
      const inside = await context.with(trace.setSpan(ROOT_CONTEXT, span), async () => {
        await Promise.resolve();
        return context.active();
      });
      expect(inside).toBe(ROOT_CONTEXT);
    });

    it('puts trace_id and span_id on log lines written inside a delivery', () => {
      const spans = r.receiver.spans;
      const hop2 = byName(spans, 'execute_tool hop2', r.threads.chain);
      const line = r.logs.find((l) => l['msg'] === 'relaying' && l['listener'] === 'hop2');
      expect(line).toMatchObject({ trace_id: hop2.traceId, span_id: hop2.spanId, threadId: r.threads.chain });
      // Outside a delivery: no trace fields.
      const started = r.logs.find((l) => l['msg'] === 'organism started');
      expect(started).toBeDefined();
      expect(started).not.toHaveProperty('trace_id');
    });
  });
}

describe('the traceparent a message carries', () => {
  const sc = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

  it('is the W3C header the standard propagator writes, and reads back as a remote context', () => {
    const carrier: Record<string, string> = {};
    new W3CTraceContextPropagator().inject(trace.setSpanContext(ROOT_CONTEXT, sc), carrier, defaultTextMapSetter);
    expect(formatTraceparent(sc)).toBe(carrier['traceparent']);
    expect(formatTraceparent({ ...sc, traceFlags: 0 })).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
    expect(parseTraceparent(formatTraceparent(sc)!)).toEqual({ ...sc, isRemote: true });
  });

  it('is absent for an invalid span, and anything else is not read as one', () => {
    expect(formatTraceparent({ ...sc, traceId: '0'.repeat(32) })).toBeNull();
    for (const bad of [
      '',
      'garbage',
      `00-${'0'.repeat(32)}-b7ad6b7169203331-01`,
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra',
    ]) {
      expect(parseTraceparent(bad), bad).toBeNull();
    }
  });
});

describe('the trace id of a thread', () => {
  it('is its UUID in lowercase hex, any other id hashed to 32 hex digits', () => {
    expect(traceIdOfThread('0AF76519-16CD-43DD-8448-EB211C80319C')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(traceIdOfThread('0af7651916cd43dd8448eb211c80319c')).toBe('0af7651916cd43dd8448eb211c80319c');
    for (const other of ['00000000-0000-0000-0000-000000000000', 'thread-7', '0af76519-16cd-43dd-8448-eb211c80319g']) {
      const id = traceIdOfThread(other);
      expect(id, other).toMatch(/^[0-9a-f]{32}$/);
      expect(id).not.toBe('0'.repeat(32));
      expect(traceIdOfThread(other)).toBe(id);
    }
  });
});

describe('tracing configuration and failures', () => {
  it('is off unless an endpoint is configured; the variables win over organism.yaml', () => {
    const org = { name: 'org', version: '1' };
    expect(resolveTracing(undefined, org, {})).toBeNull();
    expect(resolveTracing({ otlp: null, captureContent: true }, org, {})).toBeNull();
    expect(resolveTracing({ otlp: { endpoint: 'http://c:4318/', protocol: null }, captureContent: false }, org, {})).toEqual({
      serviceName: 'org',
      serviceVersion: '1',
      protocol: 'http/protobuf',
      url: 'http://c:4318/v1/traces',
      captureContent: false,
      contextManager: false,
    });
    // The global context manager only when asked: organism.yaml, or the variable, which wins.
    const yaml = { otlp: { endpoint: 'http://c:4318', protocol: null }, captureContent: false, contextManager: true } as const;
    expect(resolveTracing(yaml, org, {})?.contextManager).toBe(true);
    expect(resolveTracing(yaml, org, { ORGANISM_OTEL_CONTEXT_MANAGER: '0' })?.contextManager).toBe(false);
    expect(resolveTracing({ ...yaml, contextManager: false }, org, { ORGANISM_OTEL_CONTEXT_MANAGER: '1' })?.contextManager).toBe(true);
    const fromEnv = resolveTracing(undefined, org, {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'svc',
    });
    expect(fromEnv).toMatchObject({ serviceName: 'svc', protocol: 'http/json', url: null });
    expect(resolveTracing({ otlp: { endpoint: 'http://c:4318', protocol: null }, captureContent: false }, org, { OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(resolveTracing(undefined, org, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://e', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(() => resolveTracing(undefined, org, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://e', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      'OTLP protocol "grpc" (from OTEL_EXPORTER_OTLP_PROTOCOL) is not supported: use http/protobuf or http/json',
    );
  });

  it('a collector that is down never blocks or fails a delivery', async () => {
    const dead = await startOtlpReceiver();
    await dead.close(); // nothing listens there any more
    const llm = await startFakeLlm({});
    const loaded = await loadOrganismFromString(traceYaml(llm.url), '/tmp/trace-test/organism.yaml');
    const organism = new Organism(loaded);
    const tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: dead.url, protocol: 'http/json' }, captureContent: false }, { name: 'x', version: '1' }, {})!);
    tracing.attach(organism);
    await organism.start();
    try {
      const { threadId } = await organism.inject('hop1', { Text: { text: 'go' } });
      await eventually(async () => (await organism.thread(threadId))?.status === 'completed', 'the chain to complete');
      const entries = await organism.storage.journal.list({ threadId, limit: 10, offset: 0 });
      expect(entries.items.map((e) => e.state)).toEqual(['ACKED', 'ACKED', 'ACKED']);
      await tracing.flush().catch(() => {});
      // The export worker did try, and its failure stayed there.
      expect(tracing.exportStats()).toMatchObject({ exported: 0, failed: 3, dropped: 0 });
    } finally {
      await organism.stop({ timeoutMs: 1_000 });
      await tracing.shutdown().catch(() => {});
      await llm.close();
    }
  }, 30_000);
});
