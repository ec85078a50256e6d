import { trace, type Span, type Tracer } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { AlwaysOnSampler, ParentBasedSampler, type ReadableSpan, type Sampler, type SpanLimits } from '@opentelemetry/sdk-trace-base';
import type { DeliveryOutcome, DeliveryWatch } from '../pump/observer.js';
import { OrganismEvent as SpanEvent } from './conventions.js';
import { DeliveryRecord, RecordOutcome } from './delivery-record.js';
import type { LiveDeliveries, LiveDelivery } from './live-deliveries.js';
import type { TracingSettings } from './settings.js';
import { BatchBuilder, SpanDecoder, SpanEncoder } from './span-records.js';
import type { WorkerSpanProcessor } from './worker-processor.js';

/*
 * Delivery spans as records (delivery-record.ts): when tracing may use them (recordsFor), the
 * record as the pump's watch of its delivery (RecordedDelivery), and where ended ones go.
 */

/** Where ended delivery records go: the export worker, or (options.exporter) the main thread's batch processor. */
export interface RecordSink {
  end(record: DeliveryRecord): void;
}

/** The SDK tracer's settings a record needs (not in its public type; checked when read). */
interface SdkTracerInternals {
  readonly _sampler?: Sampler;
  readonly _spanLimits?: SpanLimits;
  readonly _resource?: Resource;
  readonly instrumentationScope?: InstrumentationScope;
}

export interface SdkProviderInternals {
  readonly _activeSpanProcessor: { onEnd(span: ReadableSpan): void };
}

const DEFAULT_SAMPLER = new ParentBasedSampler({ root: new AlwaysOnSampler() }).toString();

/**
 * Records instead of SDK spans for deliveries, when nothing but the organism can reach a
 * delivery's span and records make exactly the span the SDK would: no context manager (with
 * one, a handler sees its delivery's span as active and may add to it), the default sampler
 * (OTEL_TRACES_SAMPLER unset, or parentbased_always_on) and span limits that a delivery span
 * cannot reach. Otherwise null: deliveries get SDK spans.
 */
export function recordsFor(tracer: Tracer, settings: TracingSettings, worker: WorkerSpanProcessor | null, mainThread: { onEnd(span: ReadableSpan): void } | null): RecordSink | null {
  if (settings.contextManager) return null;
  const t = tracer as unknown as SdkTracerInternals;
  const limits = t._spanLimits;
  const resource = t._resource;
  const scope = t.instrumentationScope;
  if (!t._sampler || !limits || !resource || !scope) return null;
  if (t._sampler.toString() !== DEFAULT_SAMPLER) return null;
  // A delivery span has at most 10 attributes, 1 link without attributes, 4 attributes per event.
  if (limits.attributeValueLengthLimit !== Infinity || (limits.attributeCountLimit ?? 128) < 10 || (limits.linkCountLimit ?? 128) < 1) return null;
  if (limits.eventCountLimit !== 128 || (limits.attributePerEventCountLimit ?? 128) < 4) return null;
  if (worker) return { end: (record) => worker.endDelivery(record, resource, scope) };
  if (!mainThread) return null;
  // Exporting on the main thread (tests, the bench comparing): the record becomes the SDK's span shape here.
  const encoder = new SpanEncoder();
  const decoder = new SpanDecoder();
  return {
    end: (record) => {
      if (!record.sampled) return;
      const out = new BatchBuilder();
      encoder.encodeDelivery(record, out, resource, scope);
      const definitions = encoder.takeDefinitions();
      if (definitions) decoder.define(definitions);
      for (const span of decoder.decode(out.take())) mainThread.onEnd(span);
    },
  };
}

/**
 * A delivery followed through its record (the counterpart of DeliverySpan without the SDK):
 * the record is also the pump's watch and the live entry, one object per delivery.
 */
export class RecordedDelivery extends DeliveryRecord implements DeliveryWatch, LiveDelivery {
  private formatted: string | null = null;
  private fields: Readonly<Record<string, string>> | null = null;
  nextLive: LiveDelivery | null = null;

  constructor(
    private readonly live: LiveDeliveries,
    private readonly sink: RecordSink,
    ...record: ConstructorParameters<typeof DeliveryRecord>
  ) {
    super(...record);
    live.add(this);
  }

  /** The ids are valid by construction: formatted without formatTraceparent's checks. */
  get traceContext(): string {
    return (this.formatted ??= `00-${this.traceId}-${this.spanId}-${this.sampled ? '01' : '00'}`);
  }

  get logFields(): Readonly<Record<string, string>> {
    return (this.fields ??= { trace_id: this.traceId, span_id: this.spanId });
  }

  /** No context manager: nothing to make active. */
  run<T>(fn: () => T): T {
    return fn();
  }

  asParent(): Span {
    return trace.wrapSpanContext(this.spanContext());
  }

  end(outcome: DeliveryOutcome): void {
    this.live.remove(this);
    if (outcome.acked) {
      this.ended(RecordOutcome.ACKED);
    } else {
      if (outcome.reason === 'budget_exhausted') this.addEvent(SpanEvent.BUDGET_EXHAUSTED, { 'organism.error': outcome.error });
      this.ended(outcome.reason === 'shutdown' ? RecordOutcome.INTERRUPTED : RecordOutcome.FAILED, outcome.reason, outcome.error);
    }
    if (this.sampled) this.sink.end(this);
  }
}
