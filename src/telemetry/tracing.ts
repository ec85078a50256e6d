import { createHash } from 'node:crypto';
import {
  context,
  diag,
  DiagLogLevel,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, RandomIdGenerator, type IdGenerator, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ListenerConfig } from '../config/types.js';
import type { OrganismEvent } from '../events/types.js';
import { errorTypeOf, type LlmCallInfo, type LlmCallWatch } from '../llm/observer.js';
import type { CompletionResult } from '../llm/types.js';
import type { Organism } from '../organism/organism.js';
import type { Message } from '../core/message.js';
import type { DeliveryOutcome, DeliveryWatch } from '../pump/observer.js';
import type { Logger } from '../util/logger.js';
import { GenAiAttr, GenAiOperation, OrganismAttr, OrganismEvent as SpanEvent } from './conventions.js';
import type { TracingSettings } from './settings.js';
import { SpanIds } from './delivery-record.js';
import { LiveDeliveries, type LiveDelivery } from './live-deliveries.js';
import { RecordedDelivery, recordsFor, type RecordSink, type SdkProviderInternals } from './recorded-deliveries.js';
import { WorkerSpanProcessor, type ExportStats } from './worker-processor.js';

export { formatTraceparent, resolveTracing, traceLogFields, tracesDestination, type OtlpProtocol, type TracingSettings } from './settings.js';
import { formatTraceparent } from './settings.js';
export { createExporter } from './exporter.js';
export type { ExportStats } from './worker-processor.js';

/**
 * The trace id of a thread: its UUID as it is (a UUID is 128 bits, like a trace id), any other
 * id hashed. Every delivery of a thread that has no parent span (its first, a later inject into
 * it, a redelivered root after a restart) lands in this one trace, and an operator can find the
 * trace from the thread id.
 */
export function traceIdOfThread(threadId: string): string {
  // The organism's own ids are UUIDs: sliced, without the general path's replace and second pattern (runs per thread root).
  if (threadId.length === 36 && UUID.test(threadId)) {
    const hex = (threadId.slice(0, 8) + threadId.slice(9, 13) + threadId.slice(14, 18) + threadId.slice(19, 23) + threadId.slice(24)).toLowerCase();
    if (hex !== INVALID_TRACE_ID) return hex;
  }
  const hex = threadId.replace(/-/g, '').toLowerCase();
  if (/^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex)) return hex;
  return createHash('sha256').update(threadId).digest('hex').slice(0, 32);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);

/** Random ids, except the trace id of a thread's root span, which the tracer sets just before starting it. */
class ThreadTraceIds implements IdGenerator {
  next: string | null = null;
  private readonly random = new RandomIdGenerator();

  generateTraceId(): string {
    const id = this.next;
    this.next = null;
    return id ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

let propagatorInstalled = false;
let contextManagerInstalled = false;

/**
 * The W3C propagator, and the context manager only when asked: process-wide, installed once.
 * Without a context manager the API's context is always ROOT and `context.with` just calls its
 * function; the organism's spans find their parents explicitly (the delivery by thread and
 * listener, the inject's request span passed by the route). The AsyncLocalStorage manager's
 * promise hook runs for every promise of the process (~64 us of main-thread CPU per journaled
 * message, bench/results/telemetry-2026-11-26-explicit-context.md).
 */
function installGlobals(contextManager: boolean): void {
  if (!propagatorInstalled) {
    propagatorInstalled = true;
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }
  if (contextManager && !contextManagerInstalled) {
    contextManagerInstalled = true;
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
}

/**
 * OpenTelemetry traces of an organism: one trace per thread, a span per delivery
 * (`invoke_agent <listener>` for agents, `execute_tool <listener>` for code listeners), a
 * `chat <model>` CLIENT span per LLM call under it, peer denials and budget events as span
 * events. The span of a delivery is the parent of the deliveries its messages cause: the
 * messages carry its W3C traceparent, journaled with them. Export is batched and off the
 * delivery path: the SDK's batch processor and OTLP exporter run in a worker thread
 * (worker-processor.ts); an exporter failure is logged, never seen by a delivery.
 */
export class OrganismTracing {
  readonly provider: NodeTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new ThreadTraceIds();
  /** Deliveries in progress by thread and listener (at most one each), for span events and the parent of LLM calls. */
  private readonly live = new LiveDeliveries();
  private readonly exporting: WorkerSpanProcessor | null;
  /** Delivery spans as plain records (delivery-record.ts), or null: as SDK spans (see recordsFor). */
  private readonly records: RecordSink | null;
  private readonly spanIds = new SpanIds();

  /**
   * options.exporter: export with it through a BatchSpanProcessor on this thread instead of
   * the export worker (tests and the bench, comparing).
   */
  constructor(
    private readonly settings: TracingSettings,
    options: { exporter?: SpanExporter; logger?: Logger } = {},
  ) {
    installGlobals(settings.contextManager);
    if (options.logger) routeDiagnostics(options.logger);
    this.exporting = options.exporter ? null : new WorkerSpanProcessor(settings);
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: settings.serviceVersion }),
      idGenerator: this.ids,
      // The batch processor reads OTEL_BSP_* and the sampler OTEL_TRACES_SAMPLER(_ARG).
      spanProcessors: [this.exporting ?? new BatchSpanProcessor(options.exporter!)],
    });
    this.tracer = this.provider.getTracer('organism', settings.serviceVersion);
    this.records = recordsFor(this.tracer, settings, this.exporting, options.exporter ? (this.provider as unknown as SdkProviderInternals)._activeSpanProcessor : null);
  }

  /** Follows the organism's deliveries and LLM calls; returns a function that stops it. */
  attach(organism: Organism): () => void {
    // privacy.redact: what the spans carry is redacted as they are handed to the export worker.
    if (this.exporting) this.exporting.encoder.redactor = () => organism.redactor;
    const offs = [
      organism.observers.deliveries.add({
        injected: (caller) => this.injected(caller),
        started: (message, listener) => this.delivery(message, listener),
      }),
      organism.observers.llm.add({ started: (call) => this.chat(call) }),
      organism.bus.on((event) => this.onEvent(event)),
    ];
    return () => offs.forEach((off) => void off());
  }

  /** Exports what is still buffered, then stops. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  /** Resolves once the export worker has loaded (a bench waits for it before timing; spans ended before are kept). */
  async ready(): Promise<void> {
    await this.exporting?.ready();
  }

  /** What the export worker delivered (null when exporting on this thread through options.exporter). */
  exportStats(): ExportStats | null {
    return this.exporting?.stats ?? null;
  }

  /**
   * A message from outside carries the caller's span (the HTTP request, passed by the route),
   * linked from the thread's root; else the active span (only a context manager has one).
   */
  private injected(caller: string | null): string | null {
    if (caller !== null) return caller;
    const span = trace.getSpan(context.active());
    return span ? formatTraceparent(span.spanContext()) : null;
  }

  private delivery(message: Message, listener: ListenerConfig): DeliveryWatch {
    if (this.records) return this.deliveryRecord(message, listener, this.records);
    const operation = listener.agent ? GenAiOperation.INVOKE_AGENT : GenAiOperation.EXECUTE_TOOL;
    const carried = message.traceContext ? parseTraceparent(message.traceContext) : null;
    let links: Link[] | undefined;
    let parent = ROOT_CONTEXT;
    if (message.parentId !== null && carried) {
      parent = trace.setSpanContext(ROOT_CONTEXT, carried);
    } else {
      // A thread's root delivery: the trace is the thread's; where it came from is a link.
      if (carried) links = [{ context: carried }];
      this.ids.next = traceIdOfThread(message.threadId);
    }
    const attributes: Attributes = {
      [GenAiAttr.OPERATION_NAME]: operation,
      [GenAiAttr.AGENT_NAME]: listener.name,
      [GenAiAttr.CONVERSATION_ID]: message.threadId,
      [OrganismAttr.MESSAGE_ID]: message.id,
      [OrganismAttr.ATTEMPT]: message.attempt,
      [OrganismAttr.PAYLOAD_TYPE]: message.payloadType,
    };
    if (!listener.agent) attributes[GenAiAttr.TOOL_NAME] = listener.name;
    const span = this.tracer.startSpan(spanName(operation, listener.name), { kind: SpanKind.INTERNAL, links, attributes }, parent);
    this.ids.next = null;
    return new DeliverySpan(span, message.threadId, listener.name, this.live, !this.settings.contextManager);
  }

  /**
   * The delivery's span as a record: what the SDK's tracer would make of it with the default
   * sampler (parent-based, always on): a thread's root is sampled, a child is sampled when its
   * parent was, and an unsampled one still gets a span id for the messages it sends.
   */
  private deliveryRecord(message: Message, listener: ListenerConfig, sink: RecordSink): DeliveryWatch {
    const operation = listener.agent ? GenAiOperation.INVOKE_AGENT : GenAiOperation.EXECUTE_TOOL;
    const carried = message.traceContext ? parseTraceparent(message.traceContext) : null;
    const child = message.parentId !== null && carried !== null;
    const traceFlags = child ? (carried.traceFlags & TraceFlags.SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE) : TraceFlags.SAMPLED;
    const record = new RecordedDelivery(
      this.live,
      sink,
      spanName(operation, listener.name),
      operation,
      listener.name,
      !listener.agent,
      child ? carried.traceId : traceIdOfThread(message.threadId),
      this.spanIds.spanId(),
      traceFlags,
      child ? carried.spanId : undefined,
      child ? carried.traceFlags : undefined,
      child || carried === null ? undefined : carried,
      message.threadId,
      message.id,
      message.attempt,
      message.payloadType,
    );
    return record;
  }

  private chat(call: LlmCallInfo): LlmCallWatch {
    // The parent: the delivery that makes the call (one per thread and listener at a time), or,
    // with a context manager, a span the handler made active around it.
    const active = this.settings.contextManager ? trace.getSpan(context.active()) : undefined;
    const delivery = active ?? this.live.get(call.threadId, call.agent)?.asParent();
    const span = this.tracer.startSpan(
      `${GenAiOperation.CHAT} ${call.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [GenAiAttr.OPERATION_NAME]: GenAiOperation.CHAT,
          [GenAiAttr.REQUEST_MODEL]: call.model,
          [GenAiAttr.REQUEST_MAX_TOKENS]: call.maxOutputTokens,
          [GenAiAttr.CONVERSATION_ID]: call.threadId,
          [GenAiAttr.AGENT_NAME]: call.agent,
          ...(this.settings.captureContent
            ? {
                [GenAiAttr.SYSTEM_INSTRUCTIONS]: JSON.stringify([{ type: 'text', content: call.system }]),
                [GenAiAttr.INPUT_MESSAGES]: JSON.stringify(call.messages.map((m) => ({ role: m.role, parts: [{ type: 'text', content: m.content }] }))),
              }
            : {}),
        },
      },
      delivery ? trace.setSpan(ROOT_CONTEXT, delivery) : ROOT_CONTEXT,
    );
    return {
      retried: (provider, reason, delayMs) =>
        span.addEvent(SpanEvent.RETRY, { 'organism.llm.provider': provider, 'organism.llm.retry_reason': reason, 'organism.llm.retry_delay_ms': delayMs }),
      succeeded: (result: CompletionResult) => {
        const u = result.usage;
        const finishReason = (result as { finishReason?: unknown }).finishReason;
        span.setAttributes({
          [GenAiAttr.PROVIDER_NAME]: result.provider,
          [GenAiAttr.RESPONSE_MODEL]: result.model,
          [GenAiAttr.USAGE_INPUT_TOKENS]: u.promptTokens,
          [GenAiAttr.USAGE_OUTPUT_TOKENS]: u.completionTokens,
          ...(u.cacheReadTokens !== null ? { [GenAiAttr.USAGE_CACHE_READ_INPUT_TOKENS]: u.cacheReadTokens } : {}),
          ...(u.cacheWriteTokens !== null ? { [GenAiAttr.USAGE_CACHE_CREATION_INPUT_TOKENS]: u.cacheWriteTokens } : {}),
          ...(u.reasoningTokens !== null ? { [GenAiAttr.USAGE_REASONING_OUTPUT_TOKENS]: u.reasoningTokens } : {}),
          ...(typeof finishReason === 'string' ? { [GenAiAttr.RESPONSE_FINISH_REASONS]: [finishReason] } : {}),
          ...(result.cost !== null ? { [OrganismAttr.COST_USD]: result.cost } : {}),
          ...(this.settings.captureContent ? { [GenAiAttr.OUTPUT_MESSAGES]: JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: result.content }] }]) } : {}),
        });
        span.end();
      },
      failed: (error) => {
        const type = errorTypeOf(error);
        span.setAttribute(GenAiAttr.ERROR_TYPE, type);
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        span.end();
      },
    };
  }

  private onEvent(event: OrganismEvent): void {
    if (event.type === 'peer_denied') {
      this.live.get(event.threadId, event.from)?.addEvent(SpanEvent.PEER_DENIED, { 'organism.peer.target': event.to, 'organism.error': event.reason });
    } else if (event.type === 'budget_warning') {
      this.live.get(event.threadId, event.agent)?.addEvent(SpanEvent.BUDGET_WARNING, {
        'organism.budget.threshold': event.threshold,
        'organism.budget.percent_used': event.percentUsed,
        'organism.budget.tokens_used': event.tokensUsed,
        'organism.budget.max_tokens': event.maxTokens,
      });
    }
  }
}

/**
 * The span of one delivery, as the pump follows it: a class rather than closures, as it is
 * made for every delivery. Its traceparent is formatted when a message first needs it.
 */
class DeliverySpan implements DeliveryWatch, LiveDelivery {
  private active: Context | null = null;
  private context: string | null = null;
  private fields: Readonly<Record<string, string>> | null = null;
  nextLive: LiveDelivery | null = null;

  /** explicitLogFields: false when the context manager's log mixin adds them (the fields would be doubled). */
  constructor(
    private readonly span: Span,
    readonly threadId: string,
    readonly listener: string,
    private readonly live: LiveDeliveries,
    private readonly explicitLogFields: boolean,
  ) {
    live.add(this);
  }

  asParent(): Span {
    return this.span;
  }

  addEvent(name: string, attributes: Attributes): void {
    this.span.addEvent(name, attributes);
  }

  get traceContext(): string | null {
    return (this.context ??= formatTraceparent(this.span.spanContext()));
  }

  get logFields(): Readonly<Record<string, string>> | null {
    if (!this.explicitLogFields) return null;
    if (this.fields === null) {
      const sc = this.span.spanContext();
      this.fields = { trace_id: sc.traceId, span_id: sc.spanId };
    }
    return this.fields;
  }

  /** Makes the span active around the handler: a no-op without a context manager (the API's default). */
  run<T>(fn: () => T): T {
    return context.with((this.active ??= trace.setSpan(ROOT_CONTEXT, this.span)), fn);
  }

  end(outcome: DeliveryOutcome): void {
    const span = this.span;
    this.live.remove(this);
    if (outcome.acked) {
      span.setAttribute(OrganismAttr.OUTCOME, 'acked');
    } else {
      if (outcome.reason === 'budget_exhausted') span.addEvent(SpanEvent.BUDGET_EXHAUSTED, { 'organism.error': outcome.error });
      span.setAttributes({
        [OrganismAttr.OUTCOME]: outcome.reason === 'shutdown' ? 'interrupted' : 'failed',
        [OrganismAttr.FAILURE_REASON]: outcome.reason,
        [GenAiAttr.ERROR_TYPE]: outcome.reason,
      });
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${outcome.reason}: ${outcome.error}` });
    }
    span.end();
  }
}

/** Span names by operation and listener, made once (the set is bounded by the configuration); looked up without building a key. */
const spanNames = new Map<string, Map<string, string>>();
function spanName(operation: string, listener: string): string {
  let byListener = spanNames.get(operation);
  if (byListener === undefined) spanNames.set(operation, (byListener = new Map()));
  let name = byListener.get(listener);
  if (name === undefined) byListener.set(listener, (name = `${operation} ${listener}`));
  return name;
}

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The remote span context of a journaled traceparent (as formatTraceparent writes it), or null when it is not one. */
export function parseTraceparent(traceparent: string): SpanContext | null {
  if (traceparent.length !== 55 || !TRACEPARENT.test(traceparent)) return null;
  // The pattern has checked the hex digits and lengths: only the all-zero ids remain invalid.
  const traceId = traceparent.slice(3, 35);
  const spanId = traceparent.slice(36, 52);
  if (traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID) return null;
  return { traceId, spanId, traceFlags: parseInt(traceparent.slice(53, 55), 16), isRemote: true };
}

let diagRouted = false;

/** The SDK reports export failures through its diag logger: they go to the organism's log as warnings. */
function routeDiagnostics(logger: Logger): void {
  if (diagRouted) return;
  diagRouted = true;
  const log =
    (level: 'warn' | 'error') =>
    (message: string, ...args: unknown[]) =>
      logger[level]({ component: 'opentelemetry', detail: args.map((a) => (a instanceof Error ? a.message : String(a))) }, message);
  diag.setLogger({ error: log('error'), warn: log('warn'), info: () => {}, debug: () => {}, verbose: () => {} }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
