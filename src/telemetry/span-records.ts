import type { Redactor } from '../util/pii.js';
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import { addHrTimes, hrTimeDuration, millisToHrTime, TraceState, type InstrumentationScope } from '@opentelemetry/core';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { GenAiAttr, OrganismAttr } from './conventions.js';
import { RecordOutcome, type DeliveryRecord } from './delivery-record.js';

/*
 * Finished spans as the main thread hands them to the export worker: one flat array of
 * primitives per batch, which the structured clone copies about twice as fast as the same data
 * as objects (measured: 1.9 vs 4.2 us per span, build and post), since it writes no property
 * names. Attribute keys, the resource and the instrumentation scope, the same for thousands of
 * spans, travel once each and are referred to by number. The worker turns the batch back into
 * ReadableSpans for the SDK's batch processor and OTLP exporter, which see what they would
 * have seen on the main thread.
 *
 * Each span starts with its form. SPAN (an SDK span), in order: name, kind, traceId, spanId,
 * traceFlags, traceState (string or undefined); parent spanId (undefined: a root), its traceId,
 * traceFlags, traceState and isRemote; start, end and duration (seconds, nanoseconds each);
 * status code and message; the number of attributes, then key number and value for each; extras
 * (undefined, or the events, links and dropped counts of the few spans that have any); resource
 * and scope numbers.
 *
 * DELIVERY (a delivery-record.ts record, the span of a delivery, about half as many values):
 * name, traceId, spanId, traceFlags, parent spanId (undefined: a thread's root) and traceFlags,
 * start (epoch ms) and duration (ms), operation, listener, whether it is a tool, thread id,
 * message id, attempt, payload type, outcome, failure reason and error, extras, resource and
 * scope numbers. Name, operation, listener and payload type, a few strings repeated for every
 * delivery, go by number like the attribute keys. The worker makes from it what the SDK's Span
 * would have held.
 */

const SPAN = 0;
const DELIVERY = 1;

export type SpanBatch = unknown[];

/**
 * A batch being filled. Values are written by index into an array kept from one full batch to
 * the next (postMessage clones it at once): growing a fresh array by push for every batch cost
 * about 5x as much (the copies as it grows, and their garbage; 11,264 values, measured 250-330
 * vs 54-72 us a batch). A batch of another size is handed over as an exact copy and the array
 * let go (few and small then: a timer's partial batch, spans of other shapes).
 */
export class BatchBuilder {
  private values: unknown[] = [];
  private n = 0;

  /** Values written so far. */
  get size(): number {
    return this.n;
  }

  put(value: unknown): void {
    if (this.n < this.values.length) this.values[this.n++] = value;
    else {
      this.values.push(value);
      this.n++;
    }
  }

  putAll(values: readonly unknown[]): void {
    for (const v of values) this.put(v);
  }

  set(at: number, value: unknown): void {
    this.values[at] = value;
  }

  /** The batch, to be posted (cloned) before anything is written again; the builder starts a new one. */
  take(): SpanBatch {
    const n = this.n;
    this.n = 0;
    if (n === this.values.length) return this.values;
    const batch = this.values.slice(0, n);
    this.values = [];
    return batch;
  }
}

interface Extras {
  readonly events: readonly TimedEvent[] | undefined;
  readonly links: readonly RecordLink[] | undefined;
  readonly dropped: readonly [attributes: number, events: number, links: number] | undefined;
}

interface RecordContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly traceState: string | undefined;
  readonly isRemote: boolean | undefined;
}

interface RecordLink {
  readonly context: RecordContext;
  readonly attributes: Attributes | undefined;
  readonly droppedAttributesCount: number | undefined;
}

/** Keys, resources and scopes the worker has not been told about yet, sent with the batch that first uses them. */
export interface RecordDefinitions {
  readonly keys: Array<readonly [id: number, key: string]>;
  readonly resources: Array<{ readonly id: number; readonly attributes: Attributes; readonly schemaUrl: string | undefined }>;
  readonly scopes: Array<{ readonly id: number; readonly scope: InstrumentationScope }>;
}

/** Main thread: spans into a batch, numbering the keys, resources and scopes it meets. */
export class SpanEncoder {
  private readonly keys = new Map<string, number>();
  private readonly resources = new Map<Resource, number>();
  private readonly scopes = new Map<InstrumentationScope, number>();
  private pending: RecordDefinitions = { keys: [], resources: [], scopes: [] };
  /** privacy.redact: applied to every string attribute, status message, event attribute and error text (none: as they are). */
  redactor: (() => Redactor) | null = null;

  private text<T>(value: T): T {
    const r = this.redactor?.();
    return r?.active ? r.value(value) : value;
  }

  /** Appends a span to a batch. */
  encode(span: ReadableSpan, out: BatchBuilder): void {
    const sc = span.spanContext();
    const parent = span.parentSpanContext;
    const status = span.status;
    out.putAll([SPAN, span.name, span.kind, sc.traceId, sc.spanId, sc.traceFlags, sc.traceState?.serialize()]);
    if (parent) out.putAll([parent.spanId, parent.traceId, parent.traceFlags, parent.traceState?.serialize(), parent.isRemote]);
    else out.putAll([undefined, undefined, undefined, undefined, undefined]);
    out.putAll([span.startTime[0], span.startTime[1], span.endTime[0], span.endTime[1], span.duration[0], span.duration[1], status.code, this.text(status.message)]);
    const attributes = span.attributes;
    const countAt = out.size;
    let count = 0;
    out.put(0);
    for (const key in attributes) {
      out.put(this.keyId(key));
      out.put(this.text(attributes[key]));
      count++;
    }
    out.set(countAt, count);
    const dropped = span.droppedAttributesCount + span.droppedEventsCount + span.droppedLinksCount;
    const extras: Extras | undefined =
      span.events.length > 0 || span.links.length > 0 || dropped > 0
        ? {
            events: span.events.length > 0 ? this.text(span.events) : undefined,
            links: span.links.length > 0 ? span.links.map(recordLink) : undefined,
            dropped: dropped > 0 ? [span.droppedAttributesCount, span.droppedEventsCount, span.droppedLinksCount] : undefined,
          }
        : undefined;
    out.put(extras);
    out.put(this.resourceId(span.resource));
    out.put(this.scopeId(span.instrumentationScope));
  }

  /** Appends an ended delivery record to a batch; resource and scope: the tracer's. */
  encodeDelivery(r: DeliveryRecord, out: BatchBuilder, resource: Resource, scope: InstrumentationScope): void {
    const extras: Extras | undefined =
      r.events !== undefined || r.link !== undefined || r.droppedEvents > 0
        ? {
            events: this.text(r.events),
            links: r.link ? [{ context: recordContext(r.link), attributes: undefined, droppedAttributesCount: undefined }] : undefined,
            dropped: r.droppedEvents > 0 ? [0, r.droppedEvents, 0] : undefined,
          }
        : undefined;
    out.put(DELIVERY);
    out.put(this.keyId(r.name));
    out.put(r.traceId);
    out.put(r.spanId);
    out.put(r.traceFlags);
    out.put(r.parentSpanId);
    out.put(r.parentTraceFlags);
    out.put(r.startMs);
    out.put(r.durationMs);
    out.put(this.keyId(r.operation));
    out.put(this.keyId(r.listener));
    out.put(r.isTool);
    out.put(r.threadId);
    out.put(r.messageId);
    out.put(r.attempt);
    out.put(this.keyId(r.payloadType));
    out.put(r.outcome);
    out.put(r.reason);
    out.put(this.text(r.error));
    out.put(extras);
    out.put(this.resourceId(resource));
    out.put(this.scopeId(scope));
  }

  /** The definitions the spans encoded since the last call refer to (sent with them). */
  takeDefinitions(): RecordDefinitions | undefined {
    const p = this.pending;
    if (p.keys.length === 0 && p.resources.length === 0 && p.scopes.length === 0) return undefined;
    this.pending = { keys: [], resources: [], scopes: [] };
    return p;
  }

  private keyId(key: string): number {
    let id = this.keys.get(key);
    if (id === undefined) {
      this.keys.set(key, (id = this.keys.size));
      this.pending.keys.push([id, key]);
    }
    return id;
  }

  private resourceId(resource: Resource): number {
    let id = this.resources.get(resource);
    if (id === undefined) {
      this.resources.set(resource, (id = this.resources.size));
      // Only its settled attributes: a resource whose detectors are still running is exported with what it has.
      this.pending.resources.push({ id, attributes: { ...resource.attributes }, schemaUrl: resource.schemaUrl });
    }
    return id;
  }

  private scopeId(scope: InstrumentationScope): number {
    let id = this.scopes.get(scope);
    if (id === undefined) {
      this.scopes.set(scope, (id = this.scopes.size));
      this.pending.scopes.push({ id, scope: { name: scope.name, version: scope.version, schemaUrl: scope.schemaUrl } });
    }
    return id;
  }
}

function recordContext(sc: SpanContext): RecordContext {
  return { traceId: sc.traceId, spanId: sc.spanId, traceFlags: sc.traceFlags, traceState: sc.traceState?.serialize(), isRemote: sc.isRemote };
}

function recordLink(link: Link): RecordLink {
  return { context: recordContext(link.context), attributes: link.attributes, droppedAttributesCount: link.droppedAttributesCount };
}

/** Export worker: batches back to ReadableSpans. */
export class SpanDecoder {
  private readonly keys: string[] = [];
  private readonly resources = new Map<number, Resource>();
  private readonly scopes = new Map<number, InstrumentationScope>();

  define(definitions: RecordDefinitions): void {
    for (const [id, key] of definitions.keys) this.keys[id] = key;
    for (const r of definitions.resources) this.resources.set(r.id, resourceFromAttributes(r.attributes, r.schemaUrl ? { schemaUrl: r.schemaUrl } : undefined));
    for (const s of definitions.scopes) this.scopes.set(s.id, s.scope);
  }

  decode(batch: SpanBatch): ReadableSpan[] {
    const spans: ReadableSpan[] = [];
    let i = 0;
    const next = () => batch[i++];
    while (i < batch.length) {
      if (next() === DELIVERY) {
        spans.push(this.delivery(next));
        continue;
      }
      const name = next() as string;
      const kind = next() as SpanKind;
      const sc = spanContext(next() as string, next() as string, next() as number, next() as string | undefined, undefined);
      const parentSpanId = next() as string | undefined;
      const parentTraceId = next() as string | undefined;
      const parentFlags = next() as number | undefined;
      const parentState = next() as string | undefined;
      const parentRemote = next() as boolean | undefined;
      const parent = parentSpanId === undefined ? undefined : spanContext(parentTraceId!, parentSpanId, parentFlags!, parentState, parentRemote);
      const startTime: HrTime = [next() as number, next() as number];
      const endTime: HrTime = [next() as number, next() as number];
      const duration: HrTime = [next() as number, next() as number];
      const code = next() as SpanStatus['code'];
      const message = next() as string | undefined;
      const attributes: Attributes = {};
      for (let n = next() as number; n > 0; n--) {
        const key = this.keys[next() as number];
        if (key === undefined) throw new Error('span batch refers to an undefined attribute key');
        attributes[key] = next() as Attributes[string];
      }
      const extras = next() as Extras | undefined;
      const resource = this.resources.get(next() as number);
      const scope = this.scopes.get(next() as number);
      if (!resource || !scope) throw new Error(`span batch refers to an undefined ${resource ? 'scope' : 'resource'}`);
      spans.push({
        name,
        kind,
        spanContext: () => sc,
        parentSpanContext: parent,
        startTime,
        endTime,
        duration,
        status: message === undefined ? { code } : { code, message },
        attributes,
        links: extras?.links
          ? extras.links.map((l) => ({
              context: spanContext(l.context.traceId, l.context.spanId, l.context.traceFlags, l.context.traceState, l.context.isRemote),
              attributes: l.attributes,
              droppedAttributesCount: l.droppedAttributesCount,
            }))
          : [],
        events: extras?.events ? [...extras.events] : [],
        ended: true,
        resource,
        instrumentationScope: scope,
        droppedAttributesCount: extras?.dropped?.[0] ?? 0,
        droppedEventsCount: extras?.dropped?.[1] ?? 0,
        droppedLinksCount: extras?.dropped?.[2] ?? 0,
      });
    }
    return spans;
  }

  private key(id: unknown): string {
    const key = this.keys[id as number];
    if (key === undefined) throw new Error('span batch refers to an undefined string');
    return key;
  }

  /** A delivery record as the SDK's Span would have held it (tracing.ts made the same span with the SDK before). */
  private delivery(next: () => unknown): ReadableSpan {
    const name = this.key(next());
    const traceId = next() as string;
    const spanId = next() as string;
    const traceFlags = next() as number;
    const parentSpanId = next() as string | undefined;
    const parentFlags = next() as number | undefined;
    const startMs = next() as number;
    const durationMs = next() as number;
    const attributes: Attributes = {
      [GenAiAttr.OPERATION_NAME]: this.key(next()),
      [GenAiAttr.AGENT_NAME]: this.key(next()),
    };
    const isTool = next() as boolean;
    attributes[GenAiAttr.CONVERSATION_ID] = next() as string;
    attributes[OrganismAttr.MESSAGE_ID] = next() as string;
    attributes[OrganismAttr.ATTEMPT] = next() as number;
    attributes[OrganismAttr.PAYLOAD_TYPE] = this.key(next());
    if (isTool) attributes[GenAiAttr.TOOL_NAME] = attributes[GenAiAttr.AGENT_NAME];
    const outcome = next() as RecordOutcome;
    const reason = next() as string | undefined;
    const error = next() as string | undefined;
    let status: SpanStatus = { code: 0 };
    if (outcome === RecordOutcome.ACKED) {
      attributes[OrganismAttr.OUTCOME] = 'acked';
    } else {
      attributes[OrganismAttr.OUTCOME] = outcome === RecordOutcome.INTERRUPTED ? 'interrupted' : 'failed';
      attributes[OrganismAttr.FAILURE_REASON] = reason;
      attributes[GenAiAttr.ERROR_TYPE] = reason;
      status = { code: 2, message: `${reason}: ${error}` };
    }
    const extras = next() as Extras | undefined;
    const resource = this.resources.get(next() as number);
    const scope = this.scopes.get(next() as number);
    if (!resource || !scope) throw new Error(`span batch refers to an undefined ${resource ? 'scope' : 'resource'}`);
    // The SDK's clock: the start in epoch milliseconds, the end that plus the monotonic duration.
    const startTime = millisToHrTime(startMs);
    let endTime = addHrTimes(startTime, millisToHrTime(durationMs));
    let duration = hrTimeDuration(startTime, endTime);
    if (duration[0] < 0) {
      endTime = [startTime[0], startTime[1]];
      duration = [0, 0];
    }
    const sc = spanContext(traceId, spanId, traceFlags, undefined, undefined);
    return {
      name,
      kind: 0,
      spanContext: () => sc,
      parentSpanContext: parentSpanId === undefined ? undefined : spanContext(traceId, parentSpanId, parentFlags!, undefined, true),
      startTime,
      endTime,
      duration,
      status,
      attributes,
      links: extras?.links ? extras.links.map((l) => ({ context: spanContext(l.context.traceId, l.context.spanId, l.context.traceFlags, l.context.traceState, l.context.isRemote) })) : [],
      events: extras?.events ? [...extras.events] : [],
      ended: true,
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: 0,
      droppedEventsCount: extras?.dropped?.[1] ?? 0,
      droppedLinksCount: 0,
    };
  }
}

function spanContext(traceId: string, spanId: string, traceFlags: number, traceState: string | undefined, isRemote: boolean | undefined): SpanContext {
  const sc: SpanContext = { traceId, spanId, traceFlags };
  if (traceState !== undefined) sc.traceState = new TraceState(traceState);
  if (isRemote !== undefined) sc.isRemote = isRemote;
  return sc;
}
