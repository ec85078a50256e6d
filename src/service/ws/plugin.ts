import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { WebSocket } from 'ws';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import type { ServiceOrganism } from '../context.js';
import { WS_SUBPROTOCOL } from '../auth.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { isRefusal, refuseUpgrade, WsAdmission, type Ticket } from './admission.js';
import { WsClient, type Channel } from './client.js';
import { handleCommand } from './commands.js';
import { NO_FILTER, parseFilter } from './filter.js';
import { frameJson, nextSeq } from './frames.js';
import { WsHub, type WsStats } from './hub.js';
import { CloseCode, closeReason, resolveLimits, type WsLimits } from './limits.js';
import { snapshotBody } from './snapshot.js';
import { upgradeAuthHook, type WsAuthenticate, type WsPrincipal } from './upgrade-auth.js';

export { DEFAULT_WS_LIMITS, CloseCode, type WsLimits } from './limits.js';
export type { WsAuthenticate, WsPrincipal } from './upgrade-auth.js';

export interface WsOptions {
  readonly organism: ServiceOrganism;
  /**
   * Resolves a bare token (from `Authorization: Bearer` or `?token=`) to a principal. Defaults
   * to the REST app's `app.authenticate` decorator; registering without either is an error.
   */
  readonly authenticate?: WsAuthenticate;
  /** Reported in the snapshot's `organism.version`. */
  readonly version?: string;
  readonly limits?: Partial<WsLimits>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Closes every WebSocket (default 1001 going away), e.g. before a graceful shutdown. */
    wsCloseAll: (code?: number, reason?: string) => void;
    /** Connected clients per channel and what was dropped (read by /metrics). */
    wsStats: () => WsStats;
  }
}

/** Closes a socket with a code and a reason that fits a close frame. */
function closeWith(socket: WebSocket, code: number, reason: string): void {
  try {
    socket.close(code, closeReason(reason));
  } catch {
    socket.terminate();
  }
}

/**
 * The subprotocol answered on the handshake: `organism.v1` when offered (browsers send their
 * token as a `bearer.` subprotocol beside it), never the token-carrying entry itself; a client
 * offering only other protocols gets the first of those, and none when it offers only a token.
 */
function selectSubprotocol(protocols: Set<string>): string | false {
  if (protocols.has(WS_SUBPROTOCOL)) return WS_SUBPROTOCOL;
  for (const p of protocols) if (!p.startsWith('bearer.')) return p;
  return false;
}

function queryOf(request: FastifyRequest): Record<string, unknown> {
  const q = request.query;
  return typeof q === 'object' && q !== null ? (q as Record<string, unknown>) : {};
}

/**
 * The live channels: `/ws` (a snapshot, then every event; commands subscribe/inject/ping) and
 * `/ws/messages` (message frames only, filtered). Upgrades without a known token are refused
 * with HTTP 401 before any WebSocket exists.
 */
const plugin: FastifyPluginAsync<WsOptions> = async (app, options) => {
  const limits = resolveLimits(options.limits);
  const { organism } = options;
  const version = options.version ?? null;
  const authenticate = options.authenticate ?? resolveAppAuthenticate(app);
  const principals = new WeakMap<FastifyRequest, WsPrincipal>();
  const hub = new WsHub(organism, limits.replayBuffer, limits.batchMs);
  /** The admission of each upgrade request (see gateUpgrades). */
  const tickets = new WeakMap<IncomingMessage, Ticket>();

  const closeAll = (code: number = CloseCode.SHUTDOWN, reason: string = Errors.WS_SHUTDOWN().detail): void => {
    for (const c of hub.clients) closeWith(c.socket, code, reason);
  };
  app.decorate('wsCloseAll', closeAll);
  app.decorate('wsStats', () => hub.stats());

  hub.start();

  // Pings keep passive clients alive through proxies; only a client that stops answering goes.
  const heartbeat = setInterval(() => {
    for (const c of hub.clients) {
      if (c.missedPings >= limits.maxMissedPings) {
        closeWith(c.socket, CloseCode.POLICY, Errors.WS_UNRESPONSIVE(c.missedPings).detail);
        hub.dropped('unresponsive');
        c.socket.terminate();
        hub.clients.delete(c);
        continue;
      }
      c.missedPings++;
      try {
        c.socket.ping();
      } catch {
        // not open any more: its close handler removes it
      }
    }
  }, limits.pingIntervalMs);
  heartbeat.unref();

  // Lagging clients are looked at often: they catch up as soon as their backlog drains.
  const lagCheck = setInterval(
    () => {
      const now = Date.now();
      for (const c of hub.clients) if (c.lagging) catchUp(c, now);
    },
    Math.min(250, limits.pingIntervalMs),
  );
  lagCheck.unref();

  function catchUp(c: WsClient, now: number): void {
    if (c.drained) {
      c.recovered();
      void sendFirst(c, true).catch((err: unknown) => closeWith(c.socket, CloseCode.INTERNAL, Errors.WS_SNAPSHOT_FAILED(err instanceof Error ? err.message : String(err)).detail));
    } else if (now - c.laggingSince > limits.slowClientGraceMs) {
      closeWith(c.socket, CloseCode.TOO_SLOW, Errors.WS_TOO_SLOW(limits.sendBufferBytes, limits.slowClientGraceMs).detail);
      hub.dropped('too_slow');
      // Its backlog may never drain; free it rather than wait for the close handshake.
      setTimeout(() => c.socket.terminate(), 2_000).unref();
      hub.clients.delete(c);
    }
  }

  /**
   * The first frame of a connection (and of a resync): a snapshot on /ws, the bootId and filter
   * on /ws/messages. Its seq is taken now, before the snapshot is read, so every live frame that
   * follows has a higher seq (the snapshot may already include some of their effects).
   */
  async function sendFirst(c: WsClient, resync: boolean, extra: Record<string, unknown> = {}): Promise<void> {
    const seq = nextSeq();
    const body = c.channel === 'control' ? await snapshotBody(organism, version) : { bootId: organism.bootId, filter: c.filter };
    c.open(frameJson('connected', { ...body, ...extra, ...(resync ? { resync: true } : {}) }, seq).json);
  }

  app.addHook('preClose', async () => {
    clearInterval(heartbeat);
    clearInterval(lagCheck);
    hub.stop();
    closeAll();
  });

  const connect = (channel: Channel) => async (socket: WebSocket, request: FastifyRequest) => {
    // Connection limits were applied before the handshake (gateUpgrades); this one ends with the first frame.
    const ticket = tickets.get(request.raw);
    try {
      await open(channel, socket, request);
    } finally {
      ticket?.handshakeDone();
    }
  };

  const open = async (channel: Channel, socket: WebSocket, request: FastifyRequest): Promise<void> => {
    const query = queryOf(request);
    const filter = parseFilter(query);
    if (filter instanceof OrganismError) return closeWith(socket, CloseCode.POLICY, filter.detail);
    const role = principals.get(request)?.role ?? 'viewer';
    const client = new WsClient(socket, channel, role, filter ?? NO_FILTER, limits.sendBufferBytes);
    socket.on('pong', () => {
      client.missedPings = 0;
    });
    socket.on('close', () => hub.clients.delete(client));
    socket.on('error', () => hub.clients.delete(client));
    socket.on('message', (data, isBinary) => {
      client.missedPings = 0;
      if (isBinary) return client.send(frameJson('error', { error: Errors.WS_MALFORMED_COMMAND('send commands as text frames').detail }).json);
      void handleCommand(organism, client, String(data)).catch(() => {});
    });

    // Resume: replay what was missed while it is still held and the process is the same one.
    const sinceRaw = query['since'];
    const since = typeof sinceRaw === 'string' && /^\d+$/.test(sinceRaw) ? Number(sinceRaw) : null;
    const bootRaw = query['bootId'] ?? query['boot_id'];
    const sameBoot = bootRaw === undefined || bootRaw === organism.bootId;
    const missed = since !== null && sameBoot ? hub.replay(since) : null;
    // Registered before any await, so no frame produced meanwhile is lost (it waits in the client).
    hub.clients.add(client);
    if (missed) {
      const replayed = missed.filter((f) => client.wants(f));
      client.open(frameJson('connected', { bootId: organism.bootId, resumed: true, since, replayed: replayed.length, filter: client.filter }).json);
      // Offered like live frames: a replay too large for the send buffer ends in a resync.
      for (const f of replayed) client.offer(f);
      client.flush();
      return;
    }
    try {
      await sendFirst(client, sinceRaw !== undefined || bootRaw !== undefined);
    } catch (err) {
      closeWith(socket, CloseCode.INTERNAL, Errors.WS_SNAPSHOT_FAILED(err instanceof Error ? err.message : String(err)).detail);
    }
  };

  // @fastify/websocket and the two routes in a context of their own: its hooks (one per request
  // at onRequest and at onResponse) and its wrapper around every route's handler then cost the
  // REST routes nothing (bench/tools/wrk-http.ts). An upgrade to any other URL is answered over
  // HTTP (404, or the route's own answer) and its socket ended (endRefusedUpgrade).
  await app.register(async (scope) => {
    // preClose runs before the server stops: every client is told it is going away (1001).
    await scope.register(websocket, { options: { maxPayload: limits.maxCommandBytes, handleProtocols: selectSubprotocol }, preClose: (done) => (closeAll(), done()) });
    gateUpgrades(scope, hub, new WsAdmission(limits), tickets);
    scope.get('/ws', { websocket: true, onRequest: upgradeAuthHook(authenticate, principals) }, connect('control'));
    scope.get('/ws/messages', { websocket: true, onRequest: upgradeAuthHook(authenticate, principals) }, connect('messages'));
  });
};

/**
 * An upgrade request answered over HTTP (refused with a 401/403/404, or a REST route's answer)
 * has its socket ended once the answer is out: the HTTP server no longer tracks that socket,
 * so it would linger and hold up shutdown. A 101 never goes through the response, so an
 * accepted WebSocket is left alone. The app's onRequest hook calls this for requests carrying
 * an Upgrade header (a property read for the others, no hook of its own).
 */
export function endRefusedUpgrade(request: FastifyRequest, reply: FastifyReply): void {
  if (request.headers.upgrade?.toLowerCase() !== 'websocket') return;
  const socket = request.raw.socket;
  reply.raw.once('finish', () => socket?.destroy());
}

/**
 * Puts the admission in front of every WebSocket upgrade of the server: @fastify/websocket's
 * listener (which routes the request through the hooks, authenticates and completes the
 * handshake) only sees upgrades within the limits; the others are answered 503 (the server is
 * full) or 429 (this address has too many connections or handshakes in progress) at once, on
 * the raw socket, with no 101. A burst of upgrades then costs little more than its TCP accepts,
 * so /health and the API keep answering.
 */
function gateUpgrades(app: FastifyInstance, hub: WsHub, admission: WsAdmission, tickets: WeakMap<IncomingMessage, Ticket>): void {
  const server = app.server;
  const inner = server.listeners('upgrade') as Array<(req: IncomingMessage, socket: Duplex, head: Buffer) => void>;
  if (inner.length === 0) throw new Error('wsPlugin: no upgrade listener to gate (@fastify/websocket not registered on this server)');
  server.removeAllListeners('upgrade');
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const ip = (socket as { remoteAddress?: string }).remoteAddress ?? 'local';
    const decision = admission.admit(ip, socket);
    if (isRefusal(decision)) {
      hub.dropped(decision.reason);
      refuseUpgrade(socket, decision.error);
      return;
    }
    tickets.set(req, decision);
    for (const listener of inner) listener.call(server, req, socket, head);
  });
}

function resolveAppAuthenticate(app: FastifyInstance): WsAuthenticate {
  const decorated = (app as unknown as { authenticate?: unknown }).authenticate;
  if (typeof decorated !== 'function') {
    throw new Error("wsPlugin needs an authenticate option (or the REST app's authenticate decorator)");
  }
  const fn = decorated as (token: string | undefined) => WsPrincipal | null;
  return (token) => fn(token);
}

export const wsPlugin = fp(plugin, { name: 'organism-ws' });
