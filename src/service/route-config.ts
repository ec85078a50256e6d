import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';

/** A route's config as Fastify keeps it: what routes declare, plus the matched route's url and method. */
export type RouteConfig = FastifyContextConfig & { readonly url?: string; readonly method?: string | string[] };

declare module 'fastify' {
  interface FastifyRequest {
    /** The matched route's config, read once per request (see routeConfig). */
    organismRouteConfig: RouteConfig | null;
  }
}

const NO_CONFIG: RouteConfig = Object.freeze({});

/**
 * The config of the route a request matched (`url` undefined: none matched). Fastify's
 * `request.routeOptions` builds a new object of eleven fields at every read, and several hooks
 * of every request read it: this reads it once and keeps the config on the request.
 */
export function routeConfig(request: FastifyRequest): RouteConfig {
  return (request.organismRouteConfig ??= (request.routeOptions.config as RouteConfig | undefined) ?? NO_CONFIG);
}

/** Declares the per-request slot routeConfig fills (once, on the root instance). */
export function registerRouteConfig(app: FastifyInstance): void {
  app.decorateRequest('organismRouteConfig', null);
}
