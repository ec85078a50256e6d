import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { SpanDecoder, SpanEncoder } from '../../src/telemetry/span-records.js';
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
      { kind: SpanKind.CLIENT, attributes: { a: 1, b: 'two', c: [true, false], d: 'dropped' }, links: [{ context: { ...remote, spanId: '00f067aa0ba902b7' }, attributes: { why: 'caller' } }] },
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
      const batch: unknown[] = [];
      for (const s of spans) encoder.encode(s, batch);
      const message = structuredClone({ batch, definitions: encoder.takeDefinitions() });
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
