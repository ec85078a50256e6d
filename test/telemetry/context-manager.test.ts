import { Writable } from 'node:stream';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { OrganismTracing, resolveTracing, traceLogFields } from '../../src/telemetry/tracing.js';
import { eventually } from '../service/fixture.js';
import { startOtlpReceiver } from './otlp-receiver.js';
import { TEST_HANDLERS } from './workload.js';

/*
 * The global AsyncLocalStorageContextManager is process-wide and installed at most once: this
 * file runs a default organism first (no manager), then one with `telemetry.context_manager`.
 */

const YAML = `organism:
  name: ctx-test
payloads:
  Text:
    fields:
      text: string
listeners:
  - name: spy
    payload: Text
    handler: ${TEST_HANDLERS}#activeSpan
`;

/** Runs one delivery of `spy` under tracing; returns the raw log line the handler wrote and its span. */
async function spyOnce(contextManager: boolean) {
  const receiver = await startOtlpReceiver();
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      raw.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const organism = new Organism(await loadOrganismFromString(YAML, '/tmp/ctx-test/organism.yaml'), { logger: pino({ level: 'info', mixin: traceLogFields }, stream) });
  const settings = resolveTracing({ otlp: { endpoint: receiver.url, protocol: 'http/json' }, captureContent: false, contextManager }, { name: 'ctx-test', version: 'test' }, {})!;
  const tracing = new OrganismTracing(settings);
  tracing.attach(organism);
  await organism.start();
  try {
    const { threadId } = await organism.inject('spy', { Text: { text: 'x' } });
    await eventually(async () => (await organism.thread(threadId))?.status === 'completed', 'the delivery');
    await tracing.flush();
    await eventually(() => receiver.spans.some((s) => s.name === 'execute_tool spy'), 'the span');
    const span = receiver.spans.find((s) => s.name === 'execute_tool spy')!;
    const line = raw.find((l) => l.includes('"active span"'))!;
    return { line, span };
  } finally {
    await organism.stop({ timeoutMs: 1_000 });
    await tracing.shutdown();
    await receiver.close();
  }
}

const afterAwait = () =>
  context.with(trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 })), async () => {
    await Promise.resolve();
    return trace.getActiveSpan()?.spanContext().spanId ?? null;
  });

describe('the global context manager', () => {
  it('is asked for with telemetry.context_manager in organism.yaml (off when absent)', async () => {
    const on = await loadOrganismFromString(`${YAML}telemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n  context_manager: true\n`, '/tmp/ctx-test/organism.yaml');
    expect(resolveTracing(on.config.telemetry, { name: 'x', version: '1' }, {})?.contextManager).toBe(true);
    const absent = await loadOrganismFromString(`${YAML}telemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n`, '/tmp/ctx-test/organism.yaml');
    expect(resolveTracing(absent.config.telemetry, { name: 'x', version: '1' }, {})?.contextManager).toBe(false);
  });

  it('is not installed by default: a handler sees no active span, its log lines still carry the delivery span', async () => {
    const { line, span } = await spyOnce(false);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(parsed).toMatchObject({ trace_id: span.traceId, span_id: span.spanId, activeSpanId: null });
    expect(await afterAwait()).toBeNull();
  }, 30_000);

  it('telemetry.context_manager brings it back: the handler sees its delivery span as active, fields written once', async () => {
    const { line, span } = await spyOnce(true);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(parsed).toMatchObject({ trace_id: span.traceId, span_id: span.spanId, activeSpanId: span.spanId });
    // The mixin adds them; the handler logger does not add them a second time.
    expect(line.split('"trace_id"')).toHaveLength(2);
    expect(await afterAwait()).toBe('2'.repeat(16));
  }, 30_000);
});
