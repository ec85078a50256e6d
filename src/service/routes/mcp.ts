import type { FastifyPluginAsync } from 'fastify';
import { Errors } from '../../errors/catalogue.js';
import type { ServiceContext } from '../context.js';

/**
 * The MCP SDK's server side, loaded at the first /mcp request: it (with zod and the SDK's
 * HTTP layer) was a tenth of the time from spawn to serving, for an endpoint most organisms
 * never see called.
 */
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../interop/mcp.js')]> | null = null;
const loadSdk = () =>
  (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../interop/mcp.js')]).catch((err: unknown) => {
    sdk = null; // tried again at the next request
    throw err;
  }));

/** Methods of an MCP JSON-RPC body (one message or a batch). */
function methods(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => (typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string' ? [(m as { method: string }).method] : []));
}

/**
 * `/mcp`: the listeners with `expose.mcp` as tools, over MCP Streamable HTTP (stateless: a
 * server and transport of the official SDK per request). A viewer may list the tools (their
 * input schemas are the payload schemas a viewer reads on /agents/{name}/schema); calling one
 * needs an operator token, like any inject.
 */
export const mcpRoutes: FastifyPluginAsync<ServiceContext> = async (app, { organism, version }) => {
  app.post('/mcp', { config: { access: 'viewer' }, schema: { hide: true } }, async (request, reply) => {
    if (request.principal?.role !== 'operator' && methods(request.body).includes('tools/call')) throw Errors.OPERATOR_REQUIRED();
    const [{ StreamableHTTPServerTransport }, { mcpServer }] = await loadSdk();
    const server = mcpServer(organism, version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
    return reply;
  });
  // Stateless: no server-initiated stream and no session to end.
  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    config: { access: 'viewer' },
    schema: { hide: true },
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw Errors.METHOD_NOT_ALLOWED('/mcp', 'POST');
    },
  });
};
