import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors, OrganismError } from '../errors/catalogue.js';
import { validationError } from './validation.js';

/** Seconds a client should wait before retrying a 503. */
const RETRY_AFTER: Record<string, string> = {
  ORGANISM_BUSY: '1',
  ORGANISM_NOT_ACCEPTING: '5',
};

/** Maps anything thrown in a request to the error body `{detail, code, errors?}`. */
export function toOrganismError(err: unknown): { error: OrganismError; unexpected: boolean } {
  if (err instanceof OrganismError) return { error: err, unexpected: false };
  const e = err as Partial<FastifyError> & { type?: string };
  if (Array.isArray(e.validation)) return { error: validationError(e.validationContext, e.validation), unexpected: false };
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { error: Errors.MALFORMED_JSON(String(e.message ?? 'invalid JSON')), unexpected: false };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { error: Errors.BODY_TOO_LARGE(String(e.message?.match(/\d+/)?.[0] ?? 'the limit')), unexpected: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      break;
  }
  if (err instanceof SyntaxError) return { error: Errors.MALFORMED_JSON(err.message), unexpected: false };
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { error: Errors.UNSUPPORTED_MEDIA_TYPE(String(e.message ?? '').replace(/^Unsupported Media Type:?\s*/i, '') || 'unknown'), unexpected: false };
  }
  // Other framework errors carrying a 4xx (bad URL encoding, bad content-length, ...) are the client's.
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    const error = Errors.BAD_REQUEST(String(e.message ?? 'invalid request'));
    Object.defineProperty(error, 'status', { value: status });
    return { error, unexpected: false };
  }
  return { error: Errors.INTERNAL_ERROR(), unexpected: true };
}

export function sendError(reply: FastifyReply, error: OrganismError): FastifyReply {
  const retryAfter = RETRY_AFTER[error.code];
  if (retryAfter) reply.header('Retry-After', retryAfter);
  const body: { detail: string; code: string; errors?: unknown } = { detail: error.detail, code: error.code };
  if (Array.isArray(error.data)) body.errors = error.data;
  return reply.code(error.status).type('application/json; charset=utf-8').send(body);
}

/** The one error handler and the not-found handler of the service. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { error, unexpected } = toOrganismError(err);
    if (unexpected) request.log.error({ err }, 'unexpected error while handling request');
    else if (error.status >= 500) request.log.warn({ code: error.code, detail: error.detail }, 'request failed');
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, Errors.ROUTE_NOT_FOUND(request.method, pathOf(request.url))));
}

/** The path without the query, bounded (it is echoed back). */
function pathOf(url: string): string {
  const path = url.split('?')[0] ?? url;
  return path.length > 200 ? `${path.slice(0, 200)}...` : path;
}
