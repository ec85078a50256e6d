import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { BatchBuilder, SpanDecoder, SpanEncoder } from '../../src/telemetry/span-records.js';
import { OrganismTracing, resolveTracing, traceIdOfThread } from '../../src/telemetry/tracing.js';
import { eventually } from '../service/fixture.js';
import { startOtlpReceiver } from './otlp-receiver.js';
import { TEST_HANDLERS } from './workload.js';

const CHAIN = `organism:
  name: worker-test
payloads:
  Text:
    fields:
      text: string
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
`;

/** What the OTLP exporter reads of a span, as plain data. */
function exported(span: ReadableSpan) {
  const ctx = (sc: ReturnType<ReadableSpan['spanContext']> | undefined) =>
    sc && { traceId: sc.traceId, spanId: sc.spanId, traceFlags: sc.traceFlags, traceState: sc.traceState?.serialize(), isRemote: sc.isRemote };
  return {
    name: span.name,
    kind: span.kind,
    context: ctx(span.spanContext()),
    parent: ctx(span.parentSpanContext),
    startTime: span.startTime,
    endTime: span.endTime,
    duration: span.duration,
    status: span.status,
    attributes: span.attributes,
    events: span.events,
    links: span.links.map((l) => ({ context: ctx(l.context), attributes: l.attributes, dropped: l.droppedAttributesCount ?? 0 })),
    dropped: [span.droppedAttributesCount, span.droppedEventsCount, span.droppedLinksCount],
    resource: span.resource.attributes,
    scope: span.instrumentationScope,
    ended: span.ended,
  };
}

describe('span records (main thread to export worker)', () => {
  it('carry everything the OTLP exporter reads of a span, through the structured clone', async () => {
    const ended: ReadableSpan[] = [];
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'records' }),
      spanLimits: { attributeCountLimit: 3 },
      spanProcessors: [{ onStart() {}, onEnd: (s) => void ended.push(s), forceFlush: async () => {}, shutdown: async () => {} }],
    });
    const tracer = provider.getTracer('organism', '9.9', { schemaUrl: 'https://opentelemetry.io/schemas/1.37.0' });
    const remote = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true, traceState: new TraceState('vendor=a,other=b') };
    const span = tracer.startSpan(
      'chat big',
      {
        kind: SpanKind.CLIENT,
        attributes: { a: 1, b: 'two', c: [true, false], d: 'dropped' },
        links: [{ context: { ...remote, spanId: '00f067aa0ba902b7' }, attributes: { why: 'caller' } }],
      },
      trace.setSpanContext(ROOT_CONTEXT, remote),
    );
    span.addEvent('organism.llm.retry', { 'organism.llm.retry_reason': 'http_500' });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    span.end();
    const root = tracer.startSpan('execute_tool hop1', { attributes: { x: 1.5 } }, ROOT_CONTEXT);
    root.end();

    const encoder = new SpanEncoder();
    const decoder = new SpanDecoder();
    const roundTrip = (spans: ReadableSpan[]) => {
      const out = new BatchBuilder();
      for (const s of spans) encoder.encode(s, out);
      const message = structuredClone({ batch: out.take(), definitions: encoder.takeDefinitions() });
      if (message.definitions) decoder.define(message.definitions);
      return decoder.decode(message.batch);
    };
    const decoded = roundTrip(ended);
    expect(decoded.map(exported)).toEqual(ended.map(exported));
    // Keys, resource and scope were sent once: a later batch refers to them by number.
    const again = roundTrip(ended);
    expect(encoder.takeDefinitions()).toBeUndefined();
    expect(again.map(exported)).toEqual(ended.map(exported));
    expect(decoded[0]!.droppedAttributesCount).toBe(1);
    expect(decoded[0]!.spanContext().traceState?.serialize()).toBe('vendor=a,other=b');
    expect(decoded[1]!.parentSpanContext).toBeUndefined();
    await provider.shutdown();
  });
});

async function chains(protocol: 'http/protobuf' | 'http/json', count: number) {
  const receiver = await startOtlpReceiver();
  const organism = new Organism(await loadOrganismFromString(CHAIN, '/tmp/worker-test/organism.yaml'));
  const tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: receiver.url, protocol }, captureContent: false }, { name: 'worker-test', version: '1' }, {})!);
  tracing.attach(organism);
  await organism.start();
  const threads: string[] = [];
  for (let i = 0; i < count; i++) threads.push((await organism.inject('hop1', { Text: { text: `go ${i}` } })).threadId);
  await eventually(() => organism.activeThreads === 0 && organism.queued === 0, 'the chains to finish');
  return { receiver, organism, tracing, threads };
}

describe('the export worker', () => {
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`exports over OTLP ${protocol}, and what is still buffered when the organism stops arrives with shutdown`, async () => {
      // The batch processor's schedule (5 s by default) has not come when the organism stops: only shutdown's flush sends them.
      const { receiver, organism, tracing, threads } = await chains(protocol, 20);
      try {
        await organism.stop({ timeoutMs: 1_000 });
        await tracing.shutdown();
        for (const type of receiver.contentTypes) expect(type).toContain(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
        expect(receiver.spans).toHaveLength(60);
        for (const id of threads) {
          const spans = receiver.spans.filter((s) => s.attributes['gen_ai.conversation.id'] === id);
          expect(spans.map((s) => s.name).sort()).toEqual(['execute_tool hop1', 'execute_tool hop2', 'execute_tool hop3']);
          for (const s of spans) expect(s.traceId).toBe(traceIdOfThread(id));
        }
        expect(tracing.exportStats()).toMatchObject({ exported: 60, failed: 0, dropped: 0 });
      } finally {
        await receiver.close();
      }
    }, 30_000);
  }

  it('does not keep a process alive that ends without shutting tracing down', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', path.resolve('test/telemetry/unshut-tracing.ts'), receiver.url], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(output).toContain('spans ended');
      expect(code).toBe(0);
    } finally {
      await receiver.close();
    }
  }, 30_000);
});

describe('delivery records (no SDK span on the main thread)', () => {
  type Internals = {
    delivery(message: unknown, listener: unknown): { traceContext: string | null; logFields: Record<string, string> | null; end(outcome: unknown): void };
    onEvent(event: unknown): void;
    records: unknown;
  };
  const settings = resolveTracing({ otlp: { endpoint: 'http://127.0.0.1:9', protocol: 'http/json' }, captureContent: false }, { name: 'records', version: '1' }, {})!;

  /** Deliveries through a tracer: as records by default, as SDK spans when a span limit is set (OTEL_SPAN_EVENT_COUNT_LIMIT=127 is one). */
  async function deliveries(sdkSpans: boolean) {
    const exporter = new InMemorySpanExporter();
    const saved = process.env['OTEL_SPAN_EVENT_COUNT_LIMIT'];
    if (sdkSpans) process.env['OTEL_SPAN_EVENT_COUNT_LIMIT'] = '127';
    let tracing: OrganismTracing;
    try {
      tracing = new OrganismTracing(settings, { exporter });
    } finally {
      if (saved === undefined) delete process.env['OTEL_SPAN_EVENT_COUNT_LIMIT'];
      else process.env['OTEL_SPAN_EVENT_COUNT_LIMIT'] = saved;
    }
    const t = tracing as unknown as Internals;
    expect(t.records === null).toBe(sdkSpans);
    const thread = '6f1c1a0e-4b7a-4c1e-9d51-1c7f0e0a2b3c';
    const caller = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const message = (id: string, parentId: string | null, traceContext: string | null, payloadType = 'Text', attempt = 1) => ({
      id,
      threadId: thread,
      parentId,
      traceContext,
      payloadType,
      attempt,
    });
    const tool = { name: 'hop1', agent: undefined };
    const agent = { name: 'writer', agent: { model: 'm' } };
    // A thread's root, linked to the caller's span: the agent sees a peer denial and a budget warning, then fails on its budget.
    const root = t.delivery(message('m1', null, caller), agent);
    t.onEvent({ type: 'peer_denied', from: 'writer', to: 'echo', threadId: thread, messageId: 'm1', reason: 'not a peer' });
    t.onEvent({ type: 'budget_warning', threadId: thread, agent: 'writer', severity: 'warning', threshold: 75, percentUsed: 76, tokensUsed: 760, tokensRemaining: 240, maxTokens: 1000 });
    const child = t.delivery(message('m2', 'm1', root.traceContext, 'Reply', 2), tool);
    child.end({ acked: true });
    root.end({ acked: false, reason: 'budget_exhausted', error: 'the thread budget is spent' });
    // A child of an unsampled parent: unsampled, never exported, its messages carry it unsampled.
    const unsampled = t.delivery(message('m3', 'm1', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'), tool);
    expect(unsampled.traceContext).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
    unsampled.end({ acked: true });
    const interrupted = t.delivery(message('m4', 'm2', child.traceContext), tool);
    interrupted.end({ acked: false, reason: 'shutdown', error: 'the organism stopped during the delivery' });
    expect(root.logFields).toEqual({ trace_id: root.traceContext!.slice(3, 35), span_id: root.traceContext!.slice(36, 52) });
    await tracing.flush();
    const spans = exporter.getFinishedSpans();
    await tracing.shutdown();
    return spans;
  }

  /** A span as exported, its random span ids and clock readings aside (checked for shape and order). */
  function comparable(spans: readonly ReadableSpan[]) {
    const ids = new Map<string, string>();
    const id = (spanId: string | undefined) => (spanId === undefined ? undefined : (ids.get(spanId) ?? (ids.set(spanId, `span${ids.size}`), `span${ids.size - 1}`)));
    return spans.map((s) => {
      const e = exported(s);
      expect(e.duration[0]).toBeGreaterThanOrEqual(0);
      expect(e.endTime[0] * 1e9 + e.endTime[1]).toBeGreaterThanOrEqual(e.startTime[0] * 1e9 + e.startTime[1]);
      for (const ev of e.events) expect(ev.time[0]).toBeGreaterThan(1_700_000_000);
      const link = (l: (typeof e.links)[number]) => ({ ...l, context: { ...l.context, spanId: id(l.context?.spanId) } });
      return {
        ...e,
        context: { ...e.context, spanId: id(e.context?.spanId) },
        parent: e.parent && { ...e.parent, spanId: id(e.parent.spanId) },
        links: e.links.map(link),
        events: e.events.map((ev) => ({ ...ev, time: 't' })),
        startTime: 't',
        endTime: 't',
        duration: 't',
        attributeOrder: Object.keys(e.attributes),
      };
    });
  }

  it('export the span the SDK makes of a delivery: ids, parent, link, attributes in order, status, events', async () => {
    const fromRecords = await deliveries(false);
    const fromSdk = await deliveries(true);
    expect(fromRecords.map((s) => s.name)).toEqual(['execute_tool hop1', 'invoke_agent writer', 'execute_tool hop1']);
    expect(comparable(fromRecords)).toEqual(comparable(fromSdk));
    const [child, root] = fromRecords;
    expect(child!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
    expect(root!.events.map((e) => e.name)).toEqual(['organism.peer_denied', 'organism.budget_warning', 'organism.budget_exhausted']);
  });
});
