import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';

/**
 * An OTLP/HTTP trace receiver for the tests: a real HTTP server that accepts what the
 * OpenTelemetry exporters send (http/json and http/protobuf) and decodes it. Protobuf bodies
 * are decoded with the OTLP proto definitions as generated in @opentelemetry/otlp-transformer
 * (0.52, installed as otlp-proto-definitions), not by hand.
 */
const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the generated protobuf module has no types
const proto: any = require('otlp-proto-definitions/build/src/generated/root.js');
const ExportTraceServiceRequest = proto.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

export type AttrValue = string | number | boolean | AttrValue[] | null;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP enum: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  readonly kind: number;
  readonly attributes: Record<string, AttrValue>;
  readonly events: Array<{ name: string; attributes: Record<string, AttrValue> }>;
  readonly links: Array<{ traceId: string; spanId: string }>;
  /** OTLP enum: 0 UNSET, 1 OK, 2 ERROR. */
  readonly status: { code: number; message: string };
  readonly serviceName: string | null;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Content types of the export requests received. */
  readonly contentTypes: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      if (req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const request = type.includes('protobuf')
        ? ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: Number, enums: Number, bytes: String, oneofs: true })
        : JSON.parse(body.toString('utf8'));
      spans.push(...flatten(request, type.includes('protobuf')));
      res.writeHead(200, { 'content-type': type.includes('protobuf') ? 'application/x-protobuf' : 'application/json' }).end(type.includes('protobuf') ? '' : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, spans, contentTypes, close: () => new Promise((r) => server.close(() => r())) };
}

/** Ids are hex in OTLP/JSON and bytes (here base64) in protobuf. */
function id(value: unknown, base64: boolean): string {
  if (typeof value !== 'string' || value === '') return '';
  return base64 ? Buffer.from(value, 'base64').toString('hex') : value.toLowerCase();
}

// biome-ignore lint/suspicious/noExplicitAny: decoded OTLP (protobuf or JSON) is untyped
function anyValue(v: any): AttrValue {
  if (!v) return null;
  // protobuf: `value` names the member of the oneof that is set; JSON: the member is the only key.
  const key: string | undefined = typeof v.value === 'string' ? v.value : Object.keys(v).find((k) => k.endsWith('Value'));
  if (!key) return null;
  const x = v[key];
  if (key === 'arrayValue') return (x?.values ?? []).map(anyValue);
  if (key === 'intValue' || key === 'doubleValue') return Number(x);
  return x as AttrValue;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded OTLP (protobuf or JSON) is untyped
function attributes(list: any[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded OTLP (protobuf or JSON) is untyped
function flatten(request: any, base64: boolean): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const service = attributes(rs.resource?.attributes)['service.name'];
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: id(s.traceId, base64),
          spanId: id(s.spanId, base64),
          parentSpanId: id(s.parentSpanId, base64),
          name: s.name,
          kind: Number(s.kind ?? 0),
          attributes: attributes(s.attributes),
          // biome-ignore lint/suspicious/noExplicitAny: decoded OTLP (protobuf or JSON) is untyped
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributes(e.attributes) })),
          // biome-ignore lint/suspicious/noExplicitAny: decoded OTLP (protobuf or JSON) is untyped
          links: (s.links ?? []).map((l: any) => ({ traceId: id(l.traceId, base64), spanId: id(l.spanId, base64) })),
          status: { code: Number(s.status?.code ?? 0), message: s.status?.message ?? '' },
          serviceName: typeof service === 'string' ? service : null,
        });
      }
    }
  }
  return out;
}
