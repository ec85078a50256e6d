import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import { TraceState, type InstrumentationScope } from '@opentelemetry/core';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';

/*
 * A finished span as the main thread hands it to the export worker: only its data, in plain
 * values the structured clone copies cheaply (no class instances, no functions). The resource
 * and instrumentation scope, the same object for thousands of spans, travel once each and are
 * referred to by number. The worker turns records back into ReadableSpans for the SDK's batch
 * processor and OTLP exporter, which see what they would have seen on the main thread.
 */

export interface SpanRecord {
  readonly name: string;
  readonly kind: SpanKind;
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly traceState: string | undefined;
  readonly parent: RecordContext | undefined;
  readonly startTime: HrTime;
  readonly endTime: HrTime;
  readonly duration: HrTime;
  readonly status: SpanStatus;
  readonly attributes: Attributes;
  readonly events: readonly TimedEvent[] | undefined;
  readonly links: readonly RecordLink[] | undefined;
  readonly dropped: readonly [attributes: number, events: number, links: number] | undefined;
  readonly resource: number;
  readonly scope: number;
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

/** A resource or scope the worker has not been told about yet, sent with the batch that first uses it. */
export interface RecordDefinitions {
  readonly resources: Array<{ readonly id: number; readonly attributes: Attributes; readonly schemaUrl: string | undefined }>;
  readonly scopes: Array<{ readonly id: number; readonly scope: InstrumentationScope }>;
}

/** Main thread: spans to records, numbering the resources and scopes it meets. */
export class SpanEncoder {
  private readonly resources = new Map<Resource, number>();
  private readonly scopes = new Map<InstrumentationScope, number>();
  private pending: RecordDefinitions = { resources: [], scopes: [] };

  encode(span: ReadableSpan): SpanRecord {
    const sc = span.spanContext();
    const parent = span.parentSpanContext;
    const dropped = span.droppedAttributesCount + span.droppedEventsCount + span.droppedLinksCount;
    return {
      name: span.name,
      kind: span.kind,
      traceId: sc.traceId,
      spanId: sc.spanId,
      traceFlags: sc.traceFlags,
      traceState: sc.traceState?.serialize(),
      parent: parent ? recordContext(parent) : undefined,
      startTime: span.startTime,
      endTime: span.endTime,
      duration: span.duration,
      status: span.status,
      attributes: span.attributes,
      // Most spans have neither: left out rather than cloned as empty arrays.
      events: span.events.length > 0 ? span.events : undefined,
      links: span.links.length > 0 ? span.links.map(recordLink) : undefined,
      dropped: dropped > 0 ? [span.droppedAttributesCount, span.droppedEventsCount, span.droppedLinksCount] : undefined,
      resource: this.resourceId(span.resource),
      scope: this.scopeId(span.instrumentationScope),
    };
  }

  /** The definitions the records encoded since the last call refer to (sent with them). */
  takeDefinitions(): RecordDefinitions | undefined {
    const p = this.pending;
    if (p.resources.length === 0 && p.scopes.length === 0) return undefined;
    this.pending = { resources: [], scopes: [] };
    return p;
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

/** Export worker: records back to ReadableSpans. */
export class SpanDecoder {
  private readonly resources = new Map<number, Resource>();
  private readonly scopes = new Map<number, InstrumentationScope>();

  define(definitions: RecordDefinitions): void {
    for (const r of definitions.resources) this.resources.set(r.id, resourceFromAttributes(r.attributes, r.schemaUrl ? { schemaUrl: r.schemaUrl } : undefined));
    for (const s of definitions.scopes) this.scopes.set(s.id, s.scope);
  }

  decode(r: SpanRecord): ReadableSpan {
    const sc = spanContext(r);
    const resource = this.resources.get(r.resource);
    const scope = this.scopes.get(r.scope);
    if (!resource || !scope) throw new Error(`span record refers to an undefined ${resource ? 'scope' : 'resource'}`);
    return {
      name: r.name,
      kind: r.kind,
      spanContext: () => sc,
      parentSpanContext: r.parent ? spanContext(r.parent) : undefined,
      startTime: r.startTime,
      endTime: r.endTime,
      duration: r.duration,
      status: r.status,
      attributes: r.attributes,
      links: r.links ? r.links.map((l) => ({ context: spanContext(l.context), attributes: l.attributes, droppedAttributesCount: l.droppedAttributesCount })) : [],
      events: r.events ? [...r.events] : [],
      ended: true,
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: r.dropped?.[0] ?? 0,
      droppedEventsCount: r.dropped?.[1] ?? 0,
      droppedLinksCount: r.dropped?.[2] ?? 0,
    };
  }
}

function spanContext(c: Omit<RecordContext, 'isRemote'> & { readonly isRemote?: boolean | undefined }): SpanContext {
  const sc: SpanContext = { traceId: c.traceId, spanId: c.spanId, traceFlags: c.traceFlags };
  if (c.traceState !== undefined) sc.traceState = new TraceState(c.traceState);
  if (c.isRemote !== undefined) sc.isRemote = c.isRemote;
  return sc;
}
