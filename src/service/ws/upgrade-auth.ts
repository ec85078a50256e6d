import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../errors/catalogue.js';
import { isWebSocketUpgrade, subprotocolToken } from '../auth.js';

export interface WsPrincipal {
  readonly name: string;
  readonly role: 'operator' | 'viewer' | 'approver';
}

/** Resolves a bare token to a principal, or null when it is missing or unknown. */
export type WsAuthenticate = (token: string | undefined) => WsPrincipal | null;

/** The token of an upgrade request: `Authorization: Bearer <token>`, else (only during a real upgrade) the `bearer.` subprotocol, else `?token=`. */
export function upgradeToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.trim() !== '') {
    const m = /^bearer\s+(\S+)\s*$/i.exec(header.trim());
    return m ? m[1] : undefined;
  }
  if (!isWebSocketUpgrade(request.headers)) return undefined;
  const fromProtocol = subprotocolToken(request.headers['sec-websocket-protocol']);
  if (fromProtocol) return fromProtocol;
  const query = request.query as Record<string, unknown> | undefined;
  const token = query?.['token'];
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/**
 * Refuses an upgrade with HTTP 401 (before any WebSocket exists, so the client sees a plain
 * status and the `detail` body, as on REST) unless the token is known. When the REST app's own
 * auth hook already identified the caller, its principal is kept.
 */
export function upgradeAuthHook(authenticate: WsAuthenticate, principals: WeakMap<FastifyRequest, WsPrincipal>) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const existing = (request as { principal?: WsPrincipal | null }).principal;
    const principal = existing ?? authenticate(upgradeToken(request));
    if (!principal) {
      const error = Errors.AUTH_REQUIRED();
      await reply.code(error.status).header('WWW-Authenticate', 'Bearer').header('Connection', 'close').send({ detail: error.detail });
      return reply;
    }
    principals.set(request, principal);
  };
}
