import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { errorResponses } from '../schemas/error.js';
import { WhoAmI } from '../schemas/whoami.js';

/**
 * GET /whoami: the caller's token name and role, so a client (the console) can tell a viewer
 * from an operator without trying an operator action. The token itself is never echoed.
 */
export const whoamiRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app) => {
  app.get('/whoami', { schema: { tags: ['auth'], summary: 'The calling token: its name and role', response: { 200: WhoAmI, ...errorResponses } } }, async (request) => {
    const principal = request.principal ?? { name: 'anonymous', role: 'operator' as const };
    return { name: principal.name, role: principal.role };
  });
};
