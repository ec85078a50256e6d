import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { redactUrl } from '../util/redact.js';
import { routeConfig } from './route-config.js';

/** A request answered in this many milliseconds or more is logged at `warn` (`serve --slow-request`). */
export const DEFAULT_SLOW_REQUEST_MS = 1_000;

export interface RequestLogSettings {
  /** Milliseconds from which a request counts as slow (logged at `warn`); 0: never. */
  readonly slowMs?: number;
}

export type RequestLogLevel = 'debug' | 'info' | 'warn';

/**
 * The level of a request's access line. A request that went well is `debug` (a console polls
 * several routes a second: at `info` its own fetches were 43 % of a server's log, and two lines
 * per request took most of the CPU of a cheap route). What an operator must see at the default
 * level:
 * - 5xx at `warn`: the server failed (the error handler logs the cause beside it);
 * - except 503 at `info`: "retry later" (draining, busy, storage away) is expected while it
 *   lasts, and whoever caused it logs it once, not once per refused request;
 * - a slow request at `warn`, whatever its status;
 * - 4xx at `info`: a client's mistake, not the server's, so not `warn`, yet the refused
 *   token, the misspelt filter or the stale console tab is what an operator looks for.
 * WebSocket upgrades are never slow: their "request" lasts as long as the connection.
 */
export function requestLogLevel(statusCode: number, elapsedMs: number, slowMs: number, websocket: boolean): RequestLogLevel {
  if (statusCode >= 500 && statusCode !== 503) return 'warn';
  if (slowMs > 0 && elapsedMs >= slowMs && !websocket) return 'warn';
  if (statusCode >= 400) return 'info';
  return 'debug';
}

/**
 * Fastify's per-request log lines at the levels above: `incoming request` at `debug` and one
 * `request completed` (or `slow request`) line with method, URL (tokens redacted), route,
 * status and time. Nothing is built for a line whose level is off.
 */
export class RequestLog extends LogController {
  private readonly slowMs: number;

  constructor(settings: RequestLogSettings = {}) {
    super();
    this.slowMs = settings.slowMs ?? DEFAULT_SLOW_REQUEST_MS;
  }

  override incomingRequest(request: FastifyRequest): void {
    if (!enabled(request, 'debug')) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const elapsedMs = reply.elapsedTime;
    if (error) {
      request.log.error({ err: error, ...line(request, reply, elapsedMs) }, 'request errored');
      return;
    }
    const websocket = routeConfig(request).websocketRoute === true;
    const level = requestLogLevel(reply.statusCode, elapsedMs, this.slowMs, websocket);
    if (!enabled(request, level)) return;
    const slow = level === 'warn' && reply.statusCode < 500;
    request.log[level](line(request, reply, elapsedMs), slow ? `slow request (${this.slowMs} ms or more)` : 'request completed');
  }
}

/** pino's level check (Fastify's silent stand-in logger has none: then every call is a no-op anyway). */
function enabled(request: FastifyRequest, level: RequestLogLevel): boolean {
  const log = request.log as { isLevelEnabled?: (level: string) => boolean };
  return log.isLevelEnabled ? log.isLevelEnabled(level) : true;
}

function line(request: FastifyRequest, reply: FastifyReply, elapsedMs: number) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    route: routeConfig(request).url ?? null,
    statusCode: reply.statusCode,
    responseTime: Math.round(elapsedMs * 100) / 100,
  };
}

type LogMethod = (...args: unknown[]) => void;
type LevelCheck = { isLevelEnabled?: (level: string) => boolean };

/**
 * Fastify's per-request child logger (`request.log`, bound to the request id), made only when
 * a line is written: most requests write none at the default level, and making a pino child
 * for each was a measurable part of a cheap request's CPU (bench/tools/wrk-http.ts). One
 * object per request: its methods live on the prototype.
 */
class LazyRequestLogger {
  private real: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings_: Record<string, unknown>,
  ) {}

  private child_(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings_, {}));
  }

  get level(): string {
    return (this.real ?? this.parent).level;
  }

  set level(level: string) {
    this.child_().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return ((this.real ?? this.parent) as LevelCheck).isLevelEnabled?.(level) ?? true;
  }

  child(...args: Parameters<FastifyBaseLogger['child']>): FastifyBaseLogger {
    return this.child_().child(...args);
  }

  bindings(): Record<string, unknown> {
    return (this.child_() as unknown as { bindings(): Record<string, unknown> }).bindings();
  }

  silent(): void {}

  private write(level: (typeof LEVELS)[number], args: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.child_()[level] as LogMethod)(...args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.write('error', args);
  }

  warn(...args: unknown[]): void {
    this.write('warn', args);
  }

  info(...args: unknown[]): void {
    this.write('info', args);
  }

  debug(...args: unknown[]): void {
    this.write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/** The childLoggerFactory Fastify is given: a lazy child (above), or the real one at once for a route with its own level or serializers. */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (parent, bindings, options) => {
  for (const _ in options) return parent.child(bindings, options);
  return new LazyRequestLogger(parent, bindings) as unknown as FastifyBaseLogger;
};
