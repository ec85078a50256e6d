import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { diag, TraceFlags } from '@opentelemetry/api';
import { getNumberFromEnv } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { DeliveryRecord } from './delivery-record.js';
import { BatchBuilder, SpanEncoder } from './span-records.js';
import type { FromWorker, ToWorker, WorkerSettings } from './worker-protocol.js';

/** What the export worker did with the spans handed to it (the bench checks that none was lost). */
export interface ExportStats {
  /** Spans the collector accepted. */
  readonly exported: number;
  /** Spans in exports that failed (the SDK logged why). */
  readonly failed: number;
  /** Export requests made. */
  readonly exports: number;
  /** Spans dropped before the worker: it was gone, or too far behind. */
  readonly dropped: number;
}

export interface WorkerProcessorOptions {
  /** Spans per hand-over (default: OTEL_BSP_MAX_EXPORT_BATCH_SIZE, else 512). */
  readonly batchSize?: number;
  /** Longest a finished span waits on the main thread (default: 200 ms, or OTEL_BSP_SCHEDULE_DELAY when shorter). */
  readonly delayMs?: number;
  /** Spans handed over and not yet taken by the worker beyond which new ones are dropped (default: 4 x OTEL_BSP_MAX_QUEUE_SIZE, else 8,192). */
  readonly maxPending?: number;
}

/**
 * A span processor that hands finished spans to a worker thread running the SDK's
 * BatchSpanProcessor and OTLP/HTTP exporter (export-worker.ts). The main thread only copies each
 * span's data into a flat batch (span-records.ts) and posts it; OTLP serialization and HTTP, about a
 * third of what tracing cost a delivery when the batch processor ran on the main thread
 * (profiled), happen on the worker's thread. Export failures stay in the worker (logged through
 * diag); nothing here waits for the worker except flush and shutdown.
 */
export class WorkerSpanProcessor implements SpanProcessor {
  private readonly worker: Worker;
  /** privacy.redact reaches the exported spans here (OrganismTracing.attach sets its redactor). */
  readonly encoder = new SpanEncoder();
  private readonly batchSize: number;
  private readonly delayMs: number;
  private readonly maxPending: number;
  private readonly batch = new BatchBuilder();
  /** Spans in the batch. */
  private buffered = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Spans posted that the worker has not taken yet. */
  private inFlight = 0;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private nextId = 0;
  private closing: Promise<void> | null = null;
  private dead: Error | null = null;
  private warnedDrop = false;
  private counts = { exported: 0, failed: 0, exports: 0, dropped: 0 };
  private readonly started: Promise<void>;
  private isReady = false;
  /** Callers waiting on the worker (ready, flush, shutdown): the worker is ref'd while there are any. */
  private holds = 0;
  private markStarted!: (err?: Error) => void;

  constructor(settings: WorkerSettings, options: WorkerProcessorOptions = {}) {
    this.batchSize = options.batchSize ?? getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE') ?? 512;
    this.delayMs = options.delayMs ?? Math.min(200, getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY') ?? 5000);
    this.maxPending = options.maxPending ?? 4 * (getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048);
    this.started = new Promise<void>((resolve, reject) => (this.markStarted = (err) => (err ? reject(err) : resolve())));
    this.started.catch(() => {}); // a worker that never started is reported by fail()
    const entry = workerEntry();
    this.worker = new Worker(entry.module, { eval: entry.eval, workerData: { protocol: settings.protocol, url: settings.url } satisfies WorkerSettings });
    this.worker.on('message', (message: FromWorker) => this.onMessage(message));
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`the trace export worker exited (code ${code})`)));
    // It never keeps the process alive by itself (flush and shutdown hold it while they wait);
    // after the listeners, as adding a 'message' listener refs the worker's port again.
    this.worker.unref();
  }

  /** Resolves once the worker has loaded the SDK (spans ended before are queued meanwhile, not lost). */
  ready(): Promise<void> {
    if (this.isReady || this.dead) return this.started;
    // Whoever waits for it keeps the process alive meanwhile.
    this.hold(+1);
    return this.started.finally(() => this.hold(-1));
  }

  get stats(): ExportStats {
    return { ...this.counts };
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0 || !this.room()) return;
    this.encoder.encode(span, this.batch);
    this.added();
  }

  /** A delivery's span as a record (delivery-record.ts), handed over like an ended span; resource and scope: its tracer's. */
  endDelivery(record: DeliveryRecord, resource: Resource, scope: InstrumentationScope): void {
    if (!record.sampled || !this.room()) return;
    this.encoder.encodeDelivery(record, this.batch, resource, scope);
    this.added();
  }

  /** Whether a span may be added (else it is dropped, and counted unless closing). */
  private room(): boolean {
    if (this.closing) return false;
    if (this.dead || this.inFlight + this.buffered >= this.maxPending) {
      this.drop(1);
      return false;
    }
    return true;
  }

  private added(): void {
    if (++this.buffered >= this.batchSize) this.handOver();
    else this.timer ??= setTimeout(() => this.handOver(), this.delayMs).unref();
  }

  forceFlush(): Promise<void> {
    if (this.closing) return this.closing;
    this.handOver();
    return this.ask('flush');
  }

  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      this.handOver();
      try {
        await this.ask('shutdown');
      } finally {
        this.worker.removeAllListeners('exit');
        await this.worker.terminate();
      }
    })();
    return this.closing;
  }

  private handOver(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const count = this.buffered;
    if (count === 0) return;
    const batch = this.batch.take();
    this.buffered = 0;
    if (this.dead) {
      this.drop(count);
      return;
    }
    this.inFlight += count;
    this.post({ type: 'spans', count, batch, definitions: this.encoder.takeDefinitions() });
  }

  private ask(type: 'flush' | 'shutdown'): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    this.hold(+1);
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.post({ type, id });
    }).finally(() => this.hold(-1));
  }

  private hold(delta: number): void {
    this.holds += delta;
    if (this.holds === 1 && delta > 0) this.worker.ref();
    else if (this.holds === 0) this.worker.unref();
  }

  private post(message: ToWorker): void {
    this.worker.postMessage(message);
  }

  private onMessage(message: FromWorker): void {
    switch (message.type) {
      case 'ready':
        this.isReady = true;
        this.markStarted();
        break;
      case 'received':
        this.inFlight -= message.spans;
        break;
      case 'exported':
        this.counts.exports++;
        if (message.ok) this.counts.exported += message.spans;
        else this.counts.failed += message.spans;
        break;
      case 'done': {
        const waiter = this.waiting.get(message.id);
        if (!waiter) break;
        this.waiting.delete(message.id);
        if (message.error === null) waiter.resolve();
        else waiter.reject(new Error(message.error));
        break;
      }
      case 'diag':
        diag[message.level](message.message, ...message.detail);
        break;
    }
  }

  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    this.markStarted(err);
    diag.error('the trace export worker stopped; spans are dropped from now on', err.message);
    this.drop(this.inFlight);
    this.inFlight = 0;
    for (const waiter of this.waiting.values()) waiter.reject(err);
    this.waiting.clear();
  }

  private drop(n: number): void {
    if (n === 0) return;
    this.counts.dropped += n;
    if (!this.warnedDrop) {
      this.warnedDrop = true;
      diag.warn(this.dead ? 'spans dropped: the trace export worker is gone' : `spans dropped: more than ${this.maxPending} spans wait for the trace export worker`);
    }
  }
}

/**
 * The worker's module: the compiled export-worker.js beside this file, or, when the organism
 * runs from its TypeScript sources (tests, the bench), export-worker.ts loaded through tsx's
 * API (Node 20 applies no --import hooks to a worker's entry module given in execArgv).
 */
function workerEntry(): { module: URL | string; eval: boolean } {
  if (!import.meta.url.endsWith('.ts')) return { module: new URL('./export-worker.js', import.meta.url), eval: false };
  // tsx's ESM API (resolving 'tsx/esm/api' from here would give its CommonJS build).
  const api = pathToFileURL(path.join(path.dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const file = new URL('./export-worker.ts', import.meta.url).href;
  return { module: `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file)}); })`, eval: true };
}
