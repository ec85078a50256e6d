import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors/catalogue.js';
import { routeConfig } from './route-config.js';

/** approver (issue 25): reads what a viewer reads, and may answer, approve and reject inbox items; nothing else. */
export type Role = 'operator' | 'viewer' | 'approver';

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

/** Who acts, as recorded on what they close: the caller's token name (`anonymous` without auth). */
export const who = (principal: { name: string } | null): string => principal?.name ?? 'anonymous';

/** What a route requires; routes declare it in `config.access` (GET defaults to viewer, the rest to operator). */
export type Access = 'public' | Role;

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (set by the auth hook; null on public routes). */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    access?: Access;
    /** A WebSocket route (the only kind where `?token=` is read). */
    websocketRoute?: boolean;
  }
  interface FastifyInstance {
    /** Resolves an Authorization header value or a bare token to a principal (null: unknown). */
    authenticate: (headerOrToken: string | null | undefined) => Principal | null;
    /** Replaces the accepted tokens (a reload that changed `auth.tokens`). */
    setAuthTokens: (tokens: readonly ApiToken[]) => void;
  }
}

const ANONYMOUS_OPERATOR: Principal = { name: 'anonymous', role: 'operator' };

/**
 * Whether a presented token equals a configured one, in constant time: every character of the
 * presented token is compared (no early exit) against the configured one's, wrapping around it,
 * so the time depends only on the presented token's length, never on where the two differ nor
 * on the configured token's length. Plain JavaScript on purpose: crypto.timingSafeEqual needs
 * equal lengths, hence a digest of each presented token first, and that hash and the copy into a
 * Buffer cost ~5 µs of CPU per request under load, a sixth of a cheap request's
 * (bench/tools/wrk-http.ts, issue 28), where this loop costs what a string comparison does.
 */
export function sameToken(presented: string, known: string): boolean {
  const n = known.length;
  let diff = presented.length ^ n;
  for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ known.charCodeAt(i % n);
  return diff === 0 && n > 0;
}

/** Looks tokens up in constant time: every configured token is compared (no early exit, sameToken). */
export function createAuthenticator(settings: AuthSettings): (headerOrToken: string | null | undefined) => Principal | null {
  const enabled = settings.enabled ?? true;
  // One principal object per token, handed out on every match (it is read-only).
  const known = settings.tokens.map((t) => ({ principal: Object.freeze({ name: t.name, role: t.role }) as Principal, token: t.token }));
  return (headerOrToken) => {
    if (!enabled) return ANONYMOUS_OPERATOR;
    const token = bearerToken(headerOrToken);
    if (!token) return null;
    let found: Principal | null = null;
    for (const k of known) {
      if (sameToken(token, k.token) && !found) found = k.principal;
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

/** A WebSocket handshake as RFC 6455 has it: `Upgrade: websocket` and `Connection: upgrade` (among others). */
export function isWebSocketUpgrade(headers: IncomingHttpHeaders): boolean {
  if (
    String(headers.upgrade ?? '')
      .trim()
      .toLowerCase() !== 'websocket'
  )
    return false;
  return String(headers.connection ?? '')
    .split(',')
    .some((t) => t.trim().toLowerCase() === 'upgrade');
}

/** How many Authorization headers the client sent (Node keeps only the first in `headers`). */
function authorizationCount(rawHeaders: readonly string[]): number {
  let n = 0;
  // Only names of the right length are lower-cased (no string is made for the others).
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') n++;
  }
  return n;
}

/**
 * The token of a request, or null when it has none. The Authorization header must use the
 * Bearer scheme (a bare token there is refused: it is how tokens leak into other schemes);
 * on a WebSocket route during a real upgrade the token may also come as a `bearer.` subprotocol
 * (what the console uses) or `?token=` (browsers cannot set headers there), never on REST routes. Two Authorization headers are refused outright.
 */
export function requestCredential(request: FastifyRequest): string | null {
  const count = authorizationCount(request.raw.rawHeaders);
  if (count > 1) throw Errors.AUTH_AMBIGUOUS(count);
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.trim().length > 0) {
    if (!/^bearer\s/i.test(header.trim())) throw Errors.AUTH_SCHEME();
    return header;
  }
  if (routeConfig(request).websocketRoute === true && isWebSocketUpgrade(request.headers)) {
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
 * Registers what auth needs on `app` (not encapsulated: it must see every route, including the
 * WebSocket plugin's): the access of each route and the `authenticate` decorator for the
 * WebSocket layer. Returns the per-request check (it sets request.principal or throws the
 * 401/403), which the app runs in its one onRequest hook (see app.ts).
 */
export function registerAuth(app: FastifyInstance, settings: AuthSettings): (request: FastifyRequest, reply: FastifyReply) => void {
  let current = createAuthenticator(settings);
  const authenticate = (headerOrToken: string | null | undefined) => current(headerOrToken);
  app.decorate('authenticate', authenticate);
  app.decorate('setAuthTokens', (tokens: readonly ApiToken[]) => {
    current = createAuthenticator({ ...settings, tokens });
  });
  app.decorateRequest('principal', null);
  app.addHook('onRoute', (route) => {
    const websocketRoute = (route as { websocket?: boolean }).websocket === true;
    const access = route.config?.access ?? defaultAccess(route.method, websocketRoute);
    route.config = { ...(route.config ?? {}), access, websocketRoute };
  });
  return (request, reply) => authorize(request, reply, authenticate);
}

/** Sets request.principal, or throws the 401/403 the request gets. */
function authorize(request: FastifyRequest, reply: FastifyReply, authenticate: (headerOrToken: string | null | undefined) => Principal | null): void {
  // No route matched: the not-found handler answers (it reveals nothing).
  const config = routeConfig(request);
  if (config.url === undefined) return;
  authorizeFor(request, reply, config.access ?? 'operator', authenticate);
}

/**
 * The check of a public route that needs a token only sometimes (an A2A agent card unless
 * `expose.a2a_public_card`): sets request.principal, or throws the 401/403 for `access`.
 */
export function requireRole(request: FastifyRequest, reply: FastifyReply, access: Role): Principal {
  authorizeFor(request, reply, access, request.server.authenticate);
  return request.principal as Principal;
}

function authorizeFor(request: FastifyRequest, reply: FastifyReply, access: Access, authenticate: (headerOrToken: string | null | undefined) => Principal | null): void {
  if (access === 'public') return;
  let credential: string | null;
  try {
    credential = requestCredential(request);
  } catch (err) {
    if (Errors.AUTH_SCHEME.is(err)) reply.header('WWW-Authenticate', 'Bearer');
    throw err;
  }
  const principal = authenticate(credential);
  if (!principal) {
    reply.header('WWW-Authenticate', 'Bearer');
    throw Errors.AUTH_REQUIRED();
  }
  request.principal = principal;
  if (access === 'operator' && principal.role !== 'operator') throw Errors.OPERATOR_REQUIRED();
  if (access === 'approver' && principal.role === 'viewer') throw Errors.APPROVER_REQUIRED();
}
