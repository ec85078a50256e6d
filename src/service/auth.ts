import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Errors } from '../errors/catalogue.js';

export type Role = 'operator' | 'viewer';

export interface ApiToken {
  readonly name: string;
  readonly role: Role;
  readonly token: string;
}

/** Resolved by the CLI (from env and the data directory); the service never reads env itself. */
export interface AuthSettings {
  readonly tokens: readonly ApiToken[];
  /** false: every caller is an operator (only allowed on loopback; the CLI enforces that). Default true. */
  readonly enabled?: boolean;
}

export interface Principal {
  readonly name: string;
  readonly role: Role;
}

/** What a route requires; routes declare it in `config.access` (GET defaults to viewer, the rest to operator). */
export type Access = 'public' | Role;

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (set by the auth hook; null on public routes). */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyInstance {
    /** Resolves an Authorization header value or a bare token to a principal (null: unknown). */
    authenticate: (headerOrToken: string | null | undefined) => Principal | null;
  }
}

const ANONYMOUS_OPERATOR: Principal = { name: 'anonymous', role: 'operator' };

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Looks tokens up in constant time: every configured token is compared (no early exit), over
 * SHA-256 digests so the comparison has a fixed length and the token length leaks nothing.
 */
export function createAuthenticator(settings: AuthSettings): (headerOrToken: string | null | undefined) => Principal | null {
  const enabled = settings.enabled ?? true;
  const known = settings.tokens.map((t) => ({ name: t.name, role: t.role, digest: digest(t.token) }));
  return (headerOrToken) => {
    if (!enabled) return ANONYMOUS_OPERATOR;
    const token = bearerToken(headerOrToken);
    if (!token) return null;
    const candidate = digest(token);
    let found: Principal | null = null;
    for (const k of known) {
      if (timingSafeEqual(candidate, k.digest) && !found) found = { name: k.name, role: k.role };
    }
    return found;
  };
}

/** `Bearer <token>` (scheme case-insensitive) or a bare token (WebSocket `?token=`). */
function bearerToken(value: string | null | undefined): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  const m = /^bearer\s+(.+)$/i.exec(trimmed);
  const token = m ? m[1]!.trim() : /\s/.test(trimmed) ? '' : trimmed;
  return token.length > 0 && token.length <= 4096 ? token : null;
}

/** The subprotocol a browser offers with its token-carrying one; the server selects it. */
export const WS_SUBPROTOCOL = 'organism.v1';
const BEARER_PROTOCOL_PREFIX = 'bearer.';

/**
 * The token a browser sends in `Sec-WebSocket-Protocol` (it cannot set Authorization on a
 * WebSocket, and a token in the URL lands in logs and history): `bearer.<base64url(token)>`
 * offered next to `organism.v1`. Null when no such entry is offered or it does not decode.
 */
export function subprotocolToken(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (typeof value !== 'string') return null;
  for (const part of value.split(',')) {
    const p = part.trim();
    if (!p.startsWith(BEARER_PROTOCOL_PREFIX)) continue;
    const encoded = p.slice(BEARER_PROTOCOL_PREFIX.length);
    if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return null;
    const token = Buffer.from(encoded, 'base64url').toString('utf8');
    return token.length > 0 ? token : null;
  }
  return null;
}

/** The credential of a request: the Authorization header, or for WebSocket upgrades also the subprotocol or `?token=`. */
export function requestCredential(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) return header;
  if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket') {
    const fromProtocol = subprotocolToken(request.headers['sec-websocket-protocol']);
    if (fromProtocol) return fromProtocol;
    const token = (request.query as Record<string, unknown> | undefined)?.['token'];
    if (typeof token === 'string') return token;
  }
  return null;
}

/** Role a route needs when it does not say: reads are for viewers, everything else for operators. */
export function defaultAccess(method: string | string[], websocket: boolean): Access {
  if (websocket) return 'viewer';
  const methods = Array.isArray(method) ? method : [method];
  return methods.every((m) => m === 'GET' || m === 'HEAD') ? 'viewer' : 'operator';
}

/**
 * Registers the auth hooks on `app` (not encapsulated: it must see every route, including the
 * WebSocket plugin's). `authenticate` is decorated on the instance for the WebSocket layer.
 */
export function registerAuth(app: FastifyInstance, settings: AuthSettings): void {
  const authenticate = createAuthenticator(settings);
  app.decorate('authenticate', authenticate);
  app.decorateRequest('principal', null);
  app.addHook('onRoute', (route) => {
    const access = route.config?.access ?? defaultAccess(route.method, (route as { websocket?: boolean }).websocket === true);
    route.config = { ...(route.config ?? {}), access };
  });
  app.addHook('onRequest', async (request, reply) => {
    // No route matched: the not-found handler answers (it reveals nothing).
    if (request.is404) return;
    const access: Access = request.routeOptions.config.access ?? 'operator';
    if (access === 'public') return;
    const principal = authenticate(requestCredential(request));
    if (!principal) {
      reply.header('WWW-Authenticate', 'Bearer');
      throw Errors.AUTH_REQUIRED();
    }
    request.principal = principal;
    if (access === 'operator' && principal.role !== 'operator') throw Errors.OPERATOR_REQUIRED();
  });
}
