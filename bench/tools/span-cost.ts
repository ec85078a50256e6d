/**
 * Per-span cost of tracing's parts, without the pump: N spans shaped like delivery spans
 * (7 attributes, a parent), made in slices of 100 per event-loop turn, with
 *   none:   spans made and ended, a processor that drops them (the SDK's span alone);
 *   main:   the SDK's BatchSpanProcessor and OTLP/protobuf exporter on this thread;
 *   worker: the export worker (WorkerSpanProcessor).
 * Exports go to a local OTLP sink in another process. CPU per span of this thread (from
 * /proc/thread-self/stat) and of the process (all threads), each mode in a fresh process.
 *
 *   node --import tsx bench/tools/span-cost.ts [spans=60000] [rounds=3]
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { createExporter } from '../../src/telemetry/exporter.js';
import { WorkerSpanProcessor } from '../../src/telemetry/worker-processor.js';
import { benchFile, startServer } from '../lib/child.js';
import { threadCpuMicros } from '../lib/cpu.js';
import { median } from '../lib/stats.js';
import type { OtlpSinkInfo } from '../servers/otlp-sink.js';

type Mode = 'none' | 'main' | 'worker';

async function child(mode: Mode, n: number): Promise<{ thread: number; process: number }> {
  const sink = await startServer<OtlpSinkInfo>(benchFile('servers/otlp-sink.ts'), {}, { what: 'OTLP sink' });
  const settings = { protocol: 'http/protobuf' as const, url: `${sink.info.url}/v1/traces` };
  const worker = mode === 'worker' ? new WorkerSpanProcessor(settings) : null;
  if (worker) await worker.ready();
  const processor: SpanProcessor =
    worker ?? (mode === 'main' ? new BatchSpanProcessor(createExporter(settings)) : { onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} });
  const provider = new NodeTracerProvider({ spanProcessors: [processor] });
  const tracer = provider.getTracer('organism', 'bench');
  const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true });
  const make = (i: number) => {
    const span = tracer.startSpan(
      'execute_tool hop2',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.agent.name': 'hop2',
          'gen_ai.conversation.id': `0af76519-16cd-43dd-8448-${String(i).padStart(12, '0')}`,
          'organism.message.id': `b7ad6b71-6920-3331-0af7-${String(i).padStart(12, '0')}`,
          'organism.attempt': 1,
          'organism.payload_type': 'Text',
          'gen_ai.tool.name': 'hop2',
        },
      },
      parent,
    );
    span.setAttribute('organism.outcome', 'acked');
    span.end();
  };
  // Warm-up, untimed.
  for (let i = 0; i < 5_000; i++) make(i);
  await provider.forceFlush();
  const t0 = threadCpuMicros()!;
  const p0 = process.cpuUsage();
  for (let i = 0; i < n; i += 100) {
    for (let j = i; j < i + 100; j++) make(j);
    await new Promise((r) => setImmediate(r));
  }
  await provider.forceFlush();
  const thread = threadCpuMicros()! - t0;
  const p = process.cpuUsage(p0);
  await provider.shutdown();
  await sink.stop();
  return { thread: thread / n, process: (p.user + p.system) / n };
}

const self = fileURLToPath(import.meta.url);
if (process.argv[2] === 'child') {
  const result = await child(process.argv[3] as Mode, Number(process.argv[4]));
  process.send!(result, () => process.exit(0));
} else {
  const n = Number(process.argv[2] ?? 60_000);
  const rounds = Number(process.argv[3] ?? 3);
  const modes: Mode[] = ['none', 'main', 'worker'];
  const out = new Map<Mode, Array<{ thread: number; process: number }>>(modes.map((m) => [m, []]));
  for (let r = 0; r < rounds; r++) {
    for (const mode of modes) {
      const c = fork(self, ['child', mode, String(n)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      out.get(mode)!.push(await new Promise((resolve) => c.once('message', (m) => resolve(m as { thread: number; process: number }))));
    }
  }
  for (const mode of modes) {
    const xs = out.get(mode)!;
    console.log(
      `${mode}: ${median(xs.map((x) => x.thread)).toFixed(1)} µs/span this thread, ${median(xs.map((x) => x.process)).toFixed(1)} µs/span process (rounds: ${xs.map((x) => `${x.thread.toFixed(1)}/${x.process.toFixed(1)}`).join(' ')})`,
    );
  }
}
