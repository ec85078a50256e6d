import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from './settings.js';

/** The OTLP/HTTP exporter for the configured protocol (without a URL it reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT). */
export function createExporter(settings: Pick<TracingSettings, 'protocol' | 'url'>): SpanExporter {
  const options = settings.url ? { url: settings.url } : {};
  return settings.protocol === 'http/json' ? new OtlpJsonExporter(options) : new OtlpProtoExporter(options);
}
