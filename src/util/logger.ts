import type { IncomingMessage } from 'node:http';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { redactUrl } from './redact.js';

export type Logger = PinoLogger;

/** privacy.redact for log lines (set by the organism from its config; null: none). */
let lineRedactor: ((line: string) => string) | null = null;

/** Sets what every line written by a `createLogger` logger passes through beside the URL token redaction (privacy.redact). */
export function setLogRedactor(redact: ((line: string) => string) | null): void {
  lineRedactor = redact;
}

/** A written line: `token=` values in URLs, then privacy.redact. */
function redactLine(line: string): string {
  const url = redactUrl(line);
  return lineRedactor ? lineRedactor(url) : url;
}
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

interface RequestLike {
  readonly method?: string;
  readonly url?: string;
  readonly ip?: string;
  readonly socket?: IncomingMessage['socket'];
}

/** Fastify's request serializer, with credentials taken out of the URL. */
function requestSerializer(req: RequestLike) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * Structured JSON logs to stderr. Secrets never reach here by design (config holds env var
 * names only); the request serializer and, as a last guard, every written line have `token=`
 * values in URLs redacted (a WebSocket client may only be able to send its token that way),
 * and, with privacy.redact, what its detectors find (setLogRedactor).
 */
export function createLogger(level: LogLevel = 'info', name = 'organism', mixin?: () => Record<string, unknown>, destination: DestinationStream = pino.destination(2)): Logger {
  return pino(
    {
      name,
      level,
      // Fields added to every line (the serve process adds the active trace and span ids).
      ...(mixin ? { mixin } : {}),
      // Fastify keeps a parent logger's serializers over its own: this one logs every request.
      serializers: { req: requestSerializer },
      hooks: { streamWrite: redactLine },
    },
    destination,
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
