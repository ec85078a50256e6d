import type { IncomingMessage } from 'node:http';
import { pino, type Logger as PinoLogger } from 'pino';
import { redactUrl } from './redact.js';

export type Logger = PinoLogger;
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
 * values in URLs redacted (a WebSocket client may only be able to send its token that way).
 */
export function createLogger(level: LogLevel = 'info', name = 'organism', mixin?: () => Record<string, unknown>): Logger {
  return pino(
    {
      name,
      level,
      // Fields added to every line (the serve process adds the active trace and span ids).
      ...(mixin ? { mixin } : {}),
      // Fastify keeps a parent logger's serializers over its own: this one logs every request.
      serializers: { req: requestSerializer },
      hooks: { streamWrite: redactUrl },
    },
    pino.destination(2),
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
