import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors, type OrganismError } from '../errors/catalogue.js';
import { errorBody, sendError } from './errors.js';

/**
 * What Node's HTTP server refuses before Fastify sees a request (a request line or headers
 * over the size limit, a request line or header it cannot parse, a missing Host, an Expect it
 * does not know) answered with the same `{detail, code}` body as every other error, instead of
 * Node's and Fastify's own bodies without a detail.
 */

/** Node's parser limit on the request line plus headers (`--max-http-header-size`, 16 KiB by default). */
const maxHeaderSize = (): number => http.maxHeaderSize;

function refusalOf(err: NodeJS.ErrnoException & { reason?: string }): OrganismError | null {
  switch (err.code) {
    case 'ECONNRESET':
      return null;
    case 'HPE_HEADER_OVERFLOW':
      return Errors.HEADERS_TOO_LARGE(maxHeaderSize());
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return Errors.REQUEST_TIMEOUT();
    default:
      return Errors.MALFORMED_HTTP(err.reason ?? err.message.replace(/^Parse Error: /, ''));
  }
}

/** Fastify's `clientErrorHandler`: the answer is written on the socket, which is then closed. */
export function answerClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Socket): void {
  const error = refusalOf(err);
  // Like Node's own handler: never write into a response that is already under way.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error && !socket.destroyed && socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify(errorBody(error));
    socket.write(
      `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * The refusal Node answers on a response of its own (with no body): an `Expect` other than
 * 100-continue (a missing Host, which Node lets through with `requireHostHeader: false`: refuseMissingHost).
 */
export function registerHttpRefusals(app: FastifyInstance): void {
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const error = Errors.EXPECTATION_FAILED(String(req.headers.expect ?? '').slice(0, 100));
    const body = JSON.stringify(errorBody(error));
    res.writeHead(error.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
}

/**
 * An HTTP/1.1 request without a Host header is refused here (Node lets it through with
 * `requireHostHeader: false`, so that it gets this body): true when answered, and the request
 * goes no further. Run first in the app's onRequest hook (see app.ts).
 */
export function refuseMissingHost(request: FastifyRequest, reply: FastifyReply): boolean {
  if (request.headers.host !== undefined || request.raw.httpVersion !== '1.1') return false;
  reply.header('connection', 'close');
  sendError(reply, Errors.MALFORMED_HTTP('an HTTP/1.1 request needs a Host header'));
  return true;
}
