import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';

// TODO(usage): routes land once src/usage/tracker.ts, budgets.ts and the usage store exist.
export const usageRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async () => {};
