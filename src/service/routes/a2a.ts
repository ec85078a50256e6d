import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../errors/catalogue.js';
import { requireRole } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { A2A_PROTOCOL_VERSION, A2aServers, a2aListener, agentCardOf, LEGACY_PROTOCOL_VERSION } from '../interop/a2a.js';
import { AgentCard } from '@a2a-js/sdk';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' } as const;

/** Where the service is reached, as the caller reached it (the agent card's URLs). */
function baseUrl(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function isStream(value: unknown): value is AsyncGenerator<unknown, void, undefined> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/**
 * Listeners with `expose.a2a` as A2A agents (issue 31), through the SDK's request handler and
 * JSON-RPC transport: this is only the Fastify adapter the SDK has for Express (its card
 * handler and JSON-RPC router), answering streams as server-sent events.
 */
export const a2aRoutes: FastifyPluginAsync<ServiceContext> = async (app, { organism }) => {
  const servers = new A2aServers(organism);
  const exposed = (name: string) => {
    const listener = a2aListener(organism, name);
    if (!listener) throw Errors.NOT_EXPOSED(name, 'A2A', 'a2a');
    return listener;
  };

  // Public as a route: the card needs a viewer (or operator) token unless its listener says `a2a_public_card`.
  app.get<{ Params: { listener: string } }>('/a2a/:listener/.well-known/agent-card.json', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const listener = a2aListener(organism, request.params.listener);
    if (!listener?.expose?.a2aPublicCard) requireRole(request, reply, 'viewer');
    const found = exposed(request.params.listener);
    reply.header('cache-control', 'no-cache');
    return AgentCard.toJSON(agentCardOf(organism, found, baseUrl(request)));
  });

  app.post<{ Params: { listener: string } }>('/a2a/:listener', { config: { access: 'operator' }, schema: { hide: true } }, async (request, reply) => {
    const listener = exposed(request.params.listener);
    const header = request.headers['a2a-version'];
    const version = (Array.isArray(header) ? header[0] : header)?.trim() || LEGACY_PROTOCOL_VERSION;
    if (version !== A2A_PROTOCOL_VERSION && version !== LEGACY_PROTOCOL_VERSION)
      throw Errors.BAD_REQUEST(`A2A-Version ${version} is not served (${A2A_PROTOCOL_VERSION} or ${LEGACY_PROTOCOL_VERSION})`);
    const legacy = version === LEGACY_PROTOCOL_VERSION;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const context = servers.context(request.principal?.name ?? 'anonymous', version);
    const result = await servers.transport(listener, baseUrl(request), legacy).handle(body, context);
    if (!isStream(result)) return result;
    return streamEvents(reply, result, body['id'] ?? null, legacy);
  });
};

/** A JSON-RPC stream as server-sent events; an error before the first event is a plain JSON-RPC error. */
async function streamEvents(reply: FastifyReply, stream: AsyncGenerator<unknown, void, undefined>, id: unknown, legacy: boolean): Promise<unknown> {
  let first: IteratorResult<unknown, void>;
  try {
    first = await stream.next();
  } catch (err) {
    return { jsonrpc: '2.0', id, error: A2aServers.errorOf(err, legacy) };
  }
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, SSE_HEADERS);
  // The client went away: end the generator (the task runs on; tasks/get or a resubscribe finds it).
  raw.on('close', () => void stream.return(undefined).catch(() => {}));
  const write = (event: unknown, name?: string) => {
    if (!raw.writableEnded) raw.write(`${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(event)}\n\n`);
  };
  try {
    if (!first.done) write(first.value);
    for (let next = await stream.next(); !next.done; next = await stream.next()) write(next.value);
  } catch (err) {
    write({ jsonrpc: '2.0', id, error: A2aServers.errorOf(err, legacy) }, 'error');
  } finally {
    if (!raw.writableEnded) raw.end();
  }
  return reply;
}
