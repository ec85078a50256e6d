import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors, OrganismError } from '../errors/catalogue.js';
import { validationError } from './validation.js';

/** Seconds a client should wait before retrying a 503 (or a 507: the disk is full). */
const RETRY_AFTER: Record<string, string> = {
  ORGANISM_BUSY: '1',
  ORGANISM_NOT_ACCEPTING: '5',
  SERVER_CLOSING: '1',
  STORAGE_FULL: '30',
  STORAGE_LOST: '5',
  STORAGE_UNAVAILABLE: '5',
};

const bounded = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max)}...` : text);

/**
 * Anything thrown while handling a request, as the error the client gets. `unexpected` marks
 * real faults (logged, generic 500); everything the client caused keeps its 4xx.
 */
export function toOrganismError(err: unknown, request?: FastifyRequest, bodyLimit?: number): { error: OrganismError; unexpected: boolean } {
  if (err instanceof OrganismError) return { error: err, unexpected: false };
  const e = (err ?? {}) as Partial<FastifyError>;
  if (Array.isArray(e.validation)) return { error: validationError(e.validationContext, e.validation), unexpected: false };
  const message = bounded(String(e.message ?? 'invalid request'));
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { error: Errors.MALFORMED_JSON(message), unexpected: false };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { error: Errors.BODY_TOO_LARGE(bodyLimit ?? 'the limit of'), unexpected: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { error: Errors.UNSUPPORTED_MEDIA_TYPE(bounded(String(request?.headers['content-type'] ?? 'none'), 100)), unexpected: false };
  }
  if (err instanceof SyntaxError) return { error: Errors.MALFORMED_JSON(message), unexpected: false };
  // Other framework errors with a 4xx (bad URL encoding, URL too long, bad content-length) are the client's.
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const error = Errors.BAD_REQUEST(message);
    Object.defineProperty(error, 'status', { value: e.statusCode });
    return { error, unexpected: false };
  }
  return { error: Errors.INTERNAL_ERROR(), unexpected: true };
}

/** Field errors come from request validation ({location, field}) or payload validation ({path}). */
function fieldProblem(item: unknown): { location: string; field: string; message: string } {
  const o = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const text = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);
  return { location: text(o['location'], 'payload'), field: text(o['field'] ?? o['path'], ''), message: text(o['message'], String(item)) };
}

/** The error body every answer carries: `{detail, code, errors?}`. */
export function errorBody(error: OrganismError): { detail: string; code: string; errors?: unknown } {
  const body: { detail: string; code: string; errors?: unknown } = { detail: error.detail, code: error.code };
  if (Array.isArray(error.data)) body.errors = error.data.map(fieldProblem);
  return body;
}

/** Writes the error body with its status (and Retry-After where RETRY_AFTER says). */
export function sendError(reply: FastifyReply, error: OrganismError): FastifyReply {
  const retryAfter = RETRY_AFTER[error.code];
  if (retryAfter) reply.header('Retry-After', retryAfter);
  return reply.code(error.status).type('application/json; charset=utf-8').send(errorBody(error));
}

/** The one error handler and the not-found handler of the service. */
export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { error, unexpected } = toOrganismError(err, request, bodyLimit);
    if (unexpected) request.log.error({ err }, 'unexpected error while handling request');
    // An unreachable database is logged by the store when it goes and when it is back, not per refused request.
    else if (error.status >= 500 && error.code !== Errors.STORAGE_UNAVAILABLE.code) request.log.warn({ code: error.code, detail: error.detail }, 'request failed');
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, Errors.ROUTE_NOT_FOUND(request.method, bounded(request.url.split('?')[0] ?? ''))));
}
