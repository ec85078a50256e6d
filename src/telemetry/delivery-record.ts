import { randomFillSync } from 'node:crypto';
import { TraceFlags, type Attributes, type HrTime, type SpanContext } from '@opentelemetry/api';
import { addHrTimes, millisToHrTime } from '@opentelemetry/core';
import type { TimedEvent } from '@opentelemetry/sdk-trace-base';

/*
 * The span of one delivery as a plain record, made without the OpenTelemetry SDK: the SDK's
 * Span (its attribute sanitizing, span context and hrtime objects, the sampler's context) and
 * the garbage it leaves were most of what tracing cost a delivery on the main thread. The record
 * holds what the span would hold, in fields; span-records.ts writes it into the export worker's
 * batch in a compact form, and the worker makes the ReadableSpan the SDK would have made
 * (same name, ids, parent, times, attributes, status, events and links).
 *
 * Used when nothing but the organism can reach the span: no context manager (a handler never
 * sees it as the active span) and the SDK's default sampler and span limits (tracing.ts decides).
 */

/** How a delivery ended, as the record writes it (the worker turns it into attributes and status). */
export const RecordOutcome = {
  OPEN: -1,
  ACKED: 0,
  FAILED: 1,
  /** Not ended: the organism stopped during it (redelivered after a restart). */
  INTERRUPTED: 2,
} as const;
export type RecordOutcome = (typeof RecordOutcome)[keyof typeof RecordOutcome];

/** The SDK's default limit on events per span (OTEL_SPAN_EVENT_COUNT_LIMIT unset): the oldest give way. */
const EVENT_COUNT_LIMIT = 128;

export class DeliveryRecord {
  readonly startMs = Date.now();
  private readonly perfStart = performance.now();
  durationMs = 0;
  outcome: RecordOutcome = RecordOutcome.OPEN;
  /** Failed or interrupted: the failure reason and the error. */
  reason: string | undefined = undefined;
  error: string | undefined = undefined;
  events: TimedEvent[] | undefined = undefined;
  droppedEvents = 0;
  private context: SpanContext | null = null;

  /**
   * traceFlags: 0 for a delivery the sampler did not record (its child messages carry it unsampled;
   * it is never exported). parentSpanId: undefined for a thread's root delivery, whose origin is `link`.
   */
  constructor(
    readonly name: string,
    readonly operation: string,
    readonly listener: string,
    readonly isTool: boolean,
    readonly traceId: string,
    readonly spanId: string,
    readonly traceFlags: number,
    readonly parentSpanId: string | undefined,
    readonly parentTraceFlags: number | undefined,
    readonly link: SpanContext | undefined,
    readonly threadId: string,
    readonly messageId: string,
    readonly attempt: number,
    readonly payloadType: string,
  ) {}

  get sampled(): boolean {
    return (this.traceFlags & TraceFlags.SAMPLED) !== 0;
  }

  /** As the API gives a span's context (the parent of the delivery's LLM calls). */
  spanContext(): SpanContext {
    return (this.context ??= { traceId: this.traceId, spanId: this.spanId, traceFlags: this.traceFlags });
  }

  /** As the SDK's Span.addEvent (time from the span's start on the monotonic clock; default limits). */
  addEvent(name: string, attributes: Attributes): void {
    if (this.outcome !== RecordOutcome.OPEN || !this.sampled) return;
    const events = (this.events ??= []);
    if (events.length >= EVENT_COUNT_LIMIT) {
      events.shift();
      this.droppedEvents++;
    }
    const copy: Attributes = {};
    for (const key in attributes) if (attributes[key] != null) copy[key] = attributes[key];
    events.push({ name, attributes: copy, time: this.timeAt(performance.now()), droppedAttributesCount: 0 });
  }

  /** Ends the record (the subclass's end, the pump's, calls it). */
  protected ended(outcome: RecordOutcome, reason?: string, error?: string): void {
    this.durationMs = performance.now() - this.perfStart;
    this.outcome = outcome;
    this.reason = reason;
    this.error = error;
  }

  private timeAt(perfNow: number): HrTime {
    return addHrTimes(millisToHrTime(this.startMs), millisToHrTime(perfNow - this.perfStart));
  }
}

const POOL_IDS = 512;

/**
 * Random span ids as the SDK's RandomIdGenerator makes them (8 random bytes in hex), drawn from
 * a pool filled 512 ids at a time instead of one system call per id.
 */
export class SpanIds {
  private readonly pool = Buffer.allocUnsafe(8 * POOL_IDS);
  private next = POOL_IDS;

  spanId(): string {
    if (this.next === POOL_IDS) {
      randomFillSync(this.pool);
      this.next = 0;
    }
    const at = 8 * this.next++;
    const id = this.pool.toString('hex', at, at + 8);
    // An all-zero id is invalid (2^-64): draw again.
    return id === '0000000000000000' ? this.spanId() : id;
  }
}
