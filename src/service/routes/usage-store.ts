import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';

// TODO: /usage/history, /usage/billing, /usage/daily once the UsageStore query API exists.
export const persistedUsageRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async () => {};
