import { context, isSpanContextValid, trace, type SpanContext } from '@opentelemetry/api';
import type { TelemetryConfig } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';

/*
 * Whether and how to trace, and the log fields of the active span: apart from tracing.ts so a
 * process that does not trace never loads the OpenTelemetry SDK and exporters (~0.15 s of CPU
 * at every worker start); the API package alone is small.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** What tracing needs, resolved from OTEL_* variables and `telemetry:` in organism.yaml. */
export interface TracingSettings {
  readonly serviceName: string;
  readonly serviceVersion: string;
  readonly protocol: OtlpProtocol;
  /** Full URL of the traces endpoint; null: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT. */
  readonly url: string | null;
  readonly captureContent: boolean;
  /**
   * Install the global AsyncLocalStorageContextManager (`telemetry.context_manager: true` or
   * ORGANISM_OTEL_CONTEXT_MANAGER=1): handler code using the OpenTelemetry API then sees the
   * delivery's span as the active one. Off by default: the organism passes its own span context
   * explicitly, and the manager's promise hook costs every promise in the process.
   */
  readonly contextManager: boolean;
}

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'];

/**
 * Tracing is on when an OTLP endpoint is configured, by the standard variables (which win) or
 * `telemetry.otlp` in organism.yaml; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it
 * off. Null: off. An unsupported protocol (grpc) is an error naming where it came from.
 */
export function resolveTracing(config: TelemetryConfig | undefined, organism: { name: string; version: string }, env: NodeJS.ProcessEnv = process.env): TracingSettings | null {
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return null;
  if (env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase() === 'none') return null;
  const envEndpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  if (!envEndpoint && !config?.otlp) return null;
  const fromEnv = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : env['OTEL_EXPORTER_OTLP_PROTOCOL'] ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : null;
  const protocol = (fromEnv ? env[fromEnv]!.trim() : (config?.otlp?.protocol ?? 'http/protobuf')) as string;
  if (!PROTOCOLS.includes(protocol)) throw Errors.OTLP_PROTOCOL_UNSUPPORTED(JSON.stringify(protocol), fromEnv ?? 'telemetry.otlp.protocol');
  const captureEnv = env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT']?.trim().toLowerCase();
  return {
    serviceName: env['OTEL_SERVICE_NAME']?.trim() || organism.name,
    serviceVersion: organism.version,
    protocol: protocol as OtlpProtocol,
    url: envEndpoint ? null : tracesUrl(config!.otlp!.endpoint),
    captureContent: config?.captureContent === true || captureEnv === 'true',
    contextManager: contextManagerWanted(config, env),
  };
}

/** ORGANISM_OTEL_CONTEXT_MANAGER (1/true or 0/false) wins over `telemetry.context_manager`. */
function contextManagerWanted(config: TelemetryConfig | undefined, env: NodeJS.ProcessEnv): boolean {
  const v = env['ORGANISM_OTEL_CONTEXT_MANAGER']?.trim().toLowerCase();
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  return config?.contextManager === true;
}

/**
 * The traces URL the exporter posts to, for people to read (the serve banner): the configured
 * one, or what the standard variables name. Credentials in the URL are left out.
 */
export function tracesDestination(settings: TracingSettings, env: NodeJS.ProcessEnv = process.env): string {
  const traces = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];
  const url = settings.url ?? (traces ? traces : env['OTEL_EXPORTER_OTLP_ENDPOINT'] ? tracesUrl(env['OTEL_EXPORTER_OTLP_ENDPOINT']) : '(the OTLP default)');
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** An OTLP base endpoint as the variables give it (`http://collector:4318`) gets the traces path. */
function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * The W3C traceparent of a span (version 00), written directly: the propagator's inject builds
 * a context and a carrier for each delivery to produce the same string. Null for an invalid span.
 * Here (API only) so the HTTP layer can format a request's span without loading the SDK.
 */
export function formatTraceparent(sc: SpanContext): string | null {
  if (!isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * `trace_id` and `span_id` of the active span, for pino's mixin (empty outside a span). Only
 * the context manager mode has an active span; without it the delivery loggers carry the
 * fields explicitly and this returns {} at once.
 */
export function traceLogFields(): Record<string, string> {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}
