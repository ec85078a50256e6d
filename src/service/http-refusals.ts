import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
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
 * The refusals Node answers on a response of its own (with no body): an `Expect` other than
 * 100-continue, and (with `requireHostHeader: false` given to the server) a missing Host.
 */
export function registerHttpRefusals(app: FastifyInstance): void {
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const error = Errors.EXPECTATION_FAILED(String(req.headers.expect ?? '').slice(0, 100));
    const body = JSON.stringify(errorBody(error));
    res.writeHead(error.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      reply.header('connection', 'close');
      return sendError(reply, Errors.MALFORMED_HTTP('an HTTP/1.1 request needs a Host header'));
    }
  });
}
