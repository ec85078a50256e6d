import websocket from '@fastify/websocket';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { WebSocket } from 'ws';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import type { Organism } from '../../organism/organism.js';
import { isoOrNull } from '../time.js';
import { agentView, journalStatsView, threadView } from '../views.js';
import { WsClient, type Channel } from './client.js';
import { NO_FILTER, parseFilter } from './filter.js';
import { frameJson } from './frames.js';
import { WsHub } from './hub.js';

export interface WsLimits {
  /** Connections at once across both channels. */
  readonly maxConnections: number;
  readonly maxPerIp: number;
  /** Bytes a socket may have waiting before it stops receiving frames (then resync). */
  readonly sendBufferBytes: number;
  /** Frames kept for `?since=` resumes. */
  readonly replayBuffer: number;
  readonly pingIntervalMs: number;
  /** Pings without a pong before the connection is dropped. */
  readonly maxMissedPings: number;
  /** How long a lagging client may stay backed up before it is closed. */
  readonly slowClientGraceMs: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxConnections: 2_000,
  maxPerIp: 1_000,
  sendBufferBytes: 1 << 20,
  replayBuffer: 10_000,
  pingIntervalMs: 30_000,
  maxMissedPings: 3,
  slowClientGraceMs: 30_000,
};

export interface WsOptions {
  readonly organism: Organism;
  readonly version: string;
  readonly limits?: Partial<WsLimits>;
}

/** Close codes: 1001 going away (shutdown), 1008 policy (limits), 1013 try again later (too slow). */
const CLOSE_GOING_AWAY = 1001;
const CLOSE_POLICY = 1008;
const CLOSE_TRY_LATER = 1013;

/**
 * The live channels: `/ws` (snapshot, then every event; commands subscribe/inject/ping) and
 * `/ws/messages` (message frames only, filtered). Authentication is the REST app's hook: the
 * upgrade request carries `Authorization: Bearer` or `?token=`, and is refused with 401 first.
 */
const plugin: FastifyPluginAsync<WsOptions> = async (app, options) => {
  const limits: WsLimits = { ...DEFAULT_WS_LIMITS, ...(options.limits ?? {}) };
  const { organism } = options;
  const hub = new WsHub(organism, limits.replayBuffer);
  hub.start();
  if (!app.hasDecorator('websocketServer')) {
    await app.register(websocket, {
      // Runs before the server closes: every client is told the server is going away.
      preClose: (done) => {
        for (const c of hub.clients) c.socket.close(CLOSE_GOING_AWAY, Errors.WS_SHUTDOWN().detail);
        done();
      },
    });
  }

  // A refused upgrade (401/403/404) is answered over the raw socket, which the HTTP server no
  // longer tracks: end it, or it would linger and hold up shutdown.
  app.addHook('onResponse', async (request, reply) => {
    if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket' && reply.statusCode !== 101) {
      request.raw.socket?.destroy();
    }
  });

  const snapshot = async (resync: boolean) => {
    const [threads, stats] = await Promise.all([
      organism.storage.threads.list({ limit: 100, offset: 0 }),
      organism.storage.journal.stats(),
    ]);
    return frameJson('connected', {
      bootId: organism.bootId,
      organism: {
        name: organism.name,
        status: organism.status,
        version: options.version,
        startedAt: isoOrNull(organism.startedAt),
        activeThreads: organism.activeThreads,
        totalMessages: organism.totalMessages,
      },
      agents: organism.agents().map(agentView),
      threads: threads.items.map(threadView),
      usage: organism.tracker.totals(),
      journal: journalStatsView({ ...stats, lastRecovery: stats.lastRecovery ?? organism.lastRecovery }),
      ...(resync ? { resync: true } : {}),
    }).json;
  };

  // Pings keep passive clients alive through proxies; only a client that stops answering goes.
  const heartbeat = setInterval(() => {
    const now = Date.now();
    for (const c of hub.clients) {
      if (c.missedPings >= limits.maxMissedPings) {
        c.socket.close(CLOSE_POLICY, Errors.WS_UNRESPONSIVE(c.missedPings).detail);
        c.socket.terminate();
        continue;
      }
      c.missedPings++;
      c.socket.ping();
      if (c.lagging) void catchUp(c, now);
    }
  }, limits.pingIntervalMs);
  heartbeat.unref();
  // Lagging clients are checked more often than pings: they recover as soon as they drain.
  const lagCheck = setInterval(() => {
    const now = Date.now();
    for (const c of hub.clients) if (c.lagging) void catchUp(c, now);
  }, 250);
  lagCheck.unref();

  async function catchUp(c: WsClient, now: number): Promise<void> {
    if (c.drained) {
      c.lagging = false;
      if (c.channel === 'control') c.send(await snapshot(true));
      else c.send(frameJson('resync', { bootId: organism.bootId, resync: true }).json);
    } else if (now - c.laggingSince > limits.slowClientGraceMs) {
      c.socket.close(CLOSE_TRY_LATER, Errors.WS_TOO_SLOW(limits.sendBufferBytes, limits.slowClientGraceMs).detail);
      setTimeout(() => c.socket.terminate(), 1_000).unref();
    }
  }

  // preClose runs before @fastify/websocket tears its server down, so clients get a real 1001.
  app.addHook('preClose', async () => {
    clearInterval(heartbeat);
    clearInterval(lagCheck);
    hub.stop();
    for (const c of hub.clients) c.socket.close(CLOSE_GOING_AWAY, Errors.WS_SHUTDOWN().detail);
  });

  const connect = (channel: Channel) => async (socket: WebSocket, request: FastifyRequest) => {
    const ip = request.ip;
    if (hub.clients.size >= limits.maxConnections) {
      socket.close(CLOSE_POLICY, Errors.WS_TOO_MANY_CONNECTIONS(limits.maxConnections).detail);
      return;
    }
    if (hub.countFrom(ip) >= limits.maxPerIp) {
      socket.close(CLOSE_POLICY, Errors.WS_TOO_MANY_FROM_IP(ip, limits.maxPerIp).detail);
      return;
    }
    const query = request.query as Record<string, unknown>;
    const role = request.principal?.role ?? 'viewer';
    const filter = channel === 'messages' ? parseFilter(query) : NO_FILTER;
    const client = new WsClient(socket, channel, role, ip, filter, limits.sendBufferBytes);
    socket.on('pong', () => {
      client.missedPings = 0;
    });
    socket.on('close', () => hub.clients.delete(client));
    socket.on('error', () => hub.clients.delete(client));
    socket.on('message', (data) => void onCommand(client, String(data)));

    // Resume: replay what was missed when it is still held and the process is the same.
    const since = Number(query['since']);
    const bootId = typeof query['bootId'] === 'string' ? query['bootId'] : typeof query['boot_id'] === 'string' ? query['boot_id'] : null;
    const canResume = Number.isInteger(since) && since >= 0 && (bootId === null || bootId === organism.bootId);
    const missed = canResume ? hub.replay(since) : null;
    // Registered before any await, so no frame produced meanwhile is lost.
    hub.clients.add(client);
    const wantsResync = query['since'] !== undefined && missed === null;
    if (channel === 'control') {
      client.send(await snapshot(wantsResync));
    } else {
      client.send(frameJson('connected', { bootId: organism.bootId, filter: client.filter, ...(wantsResync ? { resync: true } : {}) }).json);
    }
    for (const f of missed ?? []) if (client.wants(f)) client.offer(f);
  };

  async function onCommand(client: WsClient, text: string): Promise<void> {
    let cmd: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('expected a JSON object');
      cmd = parsed as Record<string, unknown>;
    } catch (err) {
      client.send(frameJson('error', { error: Errors.WS_MALFORMED_COMMAND((err as Error).message).detail }).json);
      return;
    }
    const name = cmd['cmd'];
    switch (name) {
      case 'ping':
        client.send(frameJson('pong', {}).json);
        return;
      case 'subscribe': {
        const source = (typeof cmd['filter'] === 'object' && cmd['filter'] !== null ? cmd['filter'] : cmd) as Record<string, unknown>;
        client.filter = parseFilter(source);
        client.send(frameJson('subscribed', { filter: client.filter }).json);
        return;
      }
      case 'inject': {
        if (client.channel !== 'control') break;
        if (client.role !== 'operator') {
          client.send(frameJson('error', { error: Errors.OPERATOR_REQUIRED().detail }).json);
          return;
        }
        try {
          const to = cmd['to'];
          if (typeof to !== 'string' || to === '') throw Errors.WS_MALFORMED_COMMAND('inject needs "to"');
          const threadId = cmd['threadId'] ?? cmd['thread_id'];
          const metadata = (cmd['metadata'] ?? {}) as Record<string, unknown>;
          const meta: Record<string, string> = {};
          for (const [k, v] of Object.entries(metadata)) if (typeof v === 'string') meta[k === 'org_id' ? 'orgId' : k === 'user_id' ? 'userId' : k] = v;
          const result = await organism.inject(to, cmd['payload'] ?? {}, {
            ...(typeof threadId === 'string' ? { threadId } : {}),
            metadata: meta,
            waitMs: 5_000,
          });
          client.send(frameJson('injected', result).json);
        } catch (err) {
          const detail = err instanceof OrganismError ? err.detail : 'Inject failed';
          client.send(frameJson('error', { error: detail }).json);
        }
        return;
      }
    }
    client.send(frameJson('error', { error: Errors.WS_UNKNOWN_COMMAND(String(name)).detail }).json);
  }

  app.get('/ws', { websocket: true, schema: { hide: true } }, connect('control'));
  app.get('/ws/messages', { websocket: true, schema: { hide: true } }, connect('messages'));
};

export const wsPlugin = fp(plugin, { name: 'organism-ws' });
