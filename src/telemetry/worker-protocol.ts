import type { RecordDefinitions, SpanBatch } from './span-records.js';
import type { TracingSettings } from './settings.js';

/** Messages between the main thread and the export worker (export-worker.ts). */

export type WorkerSettings = Pick<TracingSettings, 'protocol' | 'url'>;

export type ToWorker =
  | { readonly type: 'spans'; readonly count: number; readonly batch: SpanBatch; readonly definitions: RecordDefinitions | undefined }
  | { readonly type: 'flush'; readonly id: number }
  | { readonly type: 'shutdown'; readonly id: number };

export type FromWorker =
  /** The worker has loaded the SDK and its exporter. */
  | { readonly type: 'ready' }
  /** A batch of spans was handed to the batch processor. */
  | { readonly type: 'received'; readonly spans: number }
  /** An export ended (ok: the collector took it). */
  | { readonly type: 'exported'; readonly spans: number; readonly ok: boolean }
  | { readonly type: 'done'; readonly id: number; readonly error: string | null }
  | { readonly type: 'diag'; readonly level: 'warn' | 'error'; readonly message: string; readonly detail: string[] };
