import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { ResolvedListener } from '../../../src/config/types.js';
import type { Organism } from '../../../src/organism/organism.js';
import { send } from '../../../src/core/handler.js';
import { wsPlugin, type WsLimits, type WsPrincipal } from '../../../src/service/ws/plugin.js';
import { eventually, listener, startOrganism } from '../../pump/harness.js';

export const OP = 'plugin-operator-token';
export const VIEW = 'plugin-viewer-token';

export type Frame = Record<string, unknown> & { event: string; seq: number; timestamp: string };

/** A token table like the REST app's, as a bare function (the plugin's `authenticate` option). */
export function tokens(token: string | undefined): WsPrincipal | null {
  if (token === OP) return { name: 'op', role: 'operator' };
  if (token === VIEW) return { name: 'view', role: 'viewer' };
  return null;
}

/** Things to undo after each test (latest first). */
export const cleanup: Array<() => Promise<void> | void> = [];
export async function runCleanup(): Promise<void> {
  while (cleanup.length) await cleanup.pop()!();
}

/** `a` forwards to `b`; `b` swallows. */
export const relay = (): ResolvedListener[] => [listener('a', { peers: ['b'], handler: (p) => send('b', p) }), listener('b')];

/** The plugin alone on a bare Fastify instance, listening on 127.0.0.1 port 0. */
export async function pluginServer(limits: Partial<WsLimits> = {}, listeners: ResolvedListener[] = relay(), existing?: Organism) {
  const organism = existing ?? (await startOrganism(listeners)).organism;
  const app: FastifyInstance = Fastify({ logger: false, forceCloseConnections: true });
  await app.register(wsPlugin, { organism, authenticate: tokens, version: 'plugin-test', limits });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  let closed = false;
  cleanup.push(async () => {
    if (!closed) await app.close();
    if (!existing) await organism.stop();
  });
  return {
    organism,
    app,
    url: `ws://127.0.0.1:${port}`,
    close: async () => {
      closed = true;
      await app.close();
    },
  };
}

export interface TestClient {
  readonly socket: WebSocket;
  readonly frames: Frame[];
  readonly closed: Promise<{ code: number; reason: string }>;
  next(event: string, from?: number, timeoutMs?: number): Promise<Frame>;
  cmd(c: Record<string, unknown>): void;
  /** Frames of one event kind. */
  of(event: string): Frame[];
}

/** A connected client that records every frame it gets. */
export async function connect(url: string, options: WebSocket.ClientOptions = {}): Promise<TestClient> {
  const frames: Frame[] = [];
  const socket = new WebSocket(url, options);
  socket.on('message', (d) => frames.push(JSON.parse(String(d)) as Frame));
  const closed = new Promise<{ code: number; reason: string }>((r) => socket.on('close', (code, reason) => r({ code, reason: String(reason) })));
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    socket.once('error', reject);
  });
  cleanup.push(() => socket.terminate());
  return {
    socket,
    frames,
    closed,
    next: (event, from = 0, timeoutMs = 10_000) => eventually(() => frames.slice(from).find((f) => f.event === event), timeoutMs, `a ${event} frame`),
    cmd: (c) => socket.send(JSON.stringify(c)),
    of: (event) => frames.filter((f) => f.event === event),
  };
}

/** The HTTP status of an upgrade attempt (101 when it was accepted) and the refusal's body and headers. */
export function upgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; wwwAuthenticate?: string; retryAfter?: string }> {
  return new Promise((resolve) => {
    const s = new WebSocket(url, { headers });
    s.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += String(c)));
      res.on('end', () => {
        resolve({
          status: res.statusCode ?? 0,
          body,
          ...(res.headers['www-authenticate'] ? { wwwAuthenticate: String(res.headers['www-authenticate']) } : {}),
          ...(res.headers['retry-after'] ? { retryAfter: String(res.headers['retry-after']) } : {}),
        });
        req.destroy();
      });
    });
    s.on('open', () => {
      resolve({ status: 101, body: '' });
      s.terminate();
    });
    s.on('error', () => {});
  });
}

/** Injects into `a` and waits for the thread to complete. */
export async function injectAndSettle(organism: Organism, text: string, threadId?: string) {
  const r = await organism.inject('a', { text }, threadId ? { threadId } : {});
  await eventually(async () => (await organism.thread(r.threadId))?.status === 'completed', 10_000, `thread ${r.threadId} to complete`);
  return r;
}

/** Pauses or resumes reading on a client's TCP socket (a client that stops reading). */
export function reading(c: TestClient, on: boolean): void {
  const raw = (c.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  if (on) raw.resume();
  else raw.pause();
}

/** The thread a frame concerns, whatever its kind. */
export function threadOf(f: Frame): string | null | undefined {
  const message = f['message'] as { threadId?: string } | undefined;
  const thread = f['thread'] as { id?: string } | undefined;
  const usage = f['usage'] as { threadId?: string } | undefined;
  if (message) return message.threadId;
  if (thread) return thread.id;
  if (usage) return usage.threadId;
  if ('currentThread' in f) return f['currentThread'] as string | null;
  if ('threadId' in f) return f['threadId'] as string;
  return undefined;
}
