import { parentPort, workerData } from 'node:worker_threads';
import { diag, DiagLogLevel } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createExporter } from './exporter.js';
import { SpanDecoder } from './span-records.js';
import type { FromWorker, ToWorker, WorkerSettings } from './worker-protocol.js';

/*
 * The export worker: the OpenTelemetry SDK's batch span processor and OTLP/HTTP exporter, in a
 * worker thread. The main thread hands it finished spans as records; OTLP serialization and the
 * HTTP requests happen here, off the event loop that runs deliveries.
 */

const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);

// The SDK reports export failures through diag: they go to the main thread, which logs them.
const forward =
  (level: 'warn' | 'error') =>
  (message: string, ...args: unknown[]) =>
    post({ type: 'diag', level, message, detail: args.map((a) => (a instanceof Error ? a.message : String(a))) });
diag.setLogger({ error: forward('error'), warn: forward('warn'), info: () => {}, debug: () => {}, verbose: () => {} }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });

const settings = workerData as WorkerSettings;
const exporter = counting(createExporter(settings));
// The batch processor reads OTEL_BSP_* (the worker has the process's environment).
const processor = new BatchSpanProcessor(exporter);
const decoder = new SpanDecoder();

/** Reports what each export delivered, so the main thread can tell (and the bench check) that no span was lost. */
function counting(inner: SpanExporter): SpanExporter {
  return {
    export: (spans, done) =>
      inner.export(spans, (result) => {
        post({ type: 'exported', spans: spans.length, ok: result.code === ExportResultCode.SUCCESS });
        done(result);
      }),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'spans':
      if (message.definitions) decoder.define(message.definitions);
      for (const span of decoder.decode(message.batch)) processor.onEnd(span);
      post({ type: 'received', spans: message.count });
      break;
    case 'flush':
      processor.forceFlush().then(
        () => post({ type: 'done', id: message.id, error: null }),
        (err: unknown) => post({ type: 'done', id: message.id, error: err instanceof Error ? err.message : String(err) }),
      );
      break;
    case 'shutdown':
      processor.shutdown().then(
        () => post({ type: 'done', id: message.id, error: null }),
        (err: unknown) => post({ type: 'done', id: message.id, error: err instanceof Error ? err.message : String(err) }),
      );
      break;
  }
});
post({ type: 'ready' });
