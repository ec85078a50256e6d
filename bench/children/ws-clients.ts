/**
 * The clients of scenario 4, in processes of their own (the scenario starts several):
 * `count` WebSocket connections per process that time
 * every frame carrying a send time (`"text":"<wall ms>"`) on arrival, plus optionally one
 * client that stops reading (its TCP socket paused) to see whether it holds the others back.
 * Frames are not JSON-parsed: the send time is read straight from the bytes, so the
 * clients' own cost stays small next to the server's.
 */
import WebSocket from 'ws';
import { serverFailed, serverReady } from '../lib/child.js';
import { percentile, until, wallMs } from '../lib/stats.js';

const MARK = Buffer.from('"text":"');
const QUOTE = 0x22;

let latencies = new Float64Array(1 << 20);
let measured = 0;
/** Event-loop utilization since the last reset: how busy this one process was receiving. */
let eluStart = performance.eventLoopUtilization();
let clients: Array<{ socket: WebSocket; frames: number; timed: number; closed: { code: number; reason: string } | null }> = [];
let stalled: { socket: WebSocket; frames: number; closed: { code: number; reason: string } | null } | null = null;

function record(ms: number): void {
  if (measured === latencies.length) {
    const bigger = new Float64Array(latencies.length * 2);
    bigger.set(latencies);
    latencies = bigger;
  }
  latencies[measured++] = ms;
}

const MESSAGE = Buffer.from('{"event":"message"');

function sentAt(data: Buffer): number | null {
  // Only message frames carry a send time; others are told apart by their first bytes.
  if (data.length < MESSAGE.length || MESSAGE.compare(data, 0, MESSAGE.length) !== 0) return null;
  const at = data.indexOf(MARK, MESSAGE.length);
  if (at < 0) return null;
  const start = at + MARK.length;
  const end = data.indexOf(QUOTE, start);
  const value = Number(data.toString('latin1', start, end));
  return Number.isFinite(value) ? value : null;
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

type Client = (typeof clients)[number];

/** Opens one timed client; its listeners are on before the upgrade completes, so no frame is missed. */
function openTimed(url: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
    const c: Client = { socket, frames: 0, timed: 0, closed: null };
    socket.on('message', (data: Buffer) => {
      const now = wallMs();
      c.frames++;
      const t = sentAt(data);
      if (t !== null) {
        c.timed++;
        record(now - t);
      }
    });
    socket.on('close', (code, reason) => (c.closed = { code, reason: String(reason) }));
    socket.once('open', () => resolve(c));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

async function connect(url: string, count: number): Promise<number> {
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - i) }, () => openTimed(url)));
    for (const c of batch) {
      c.socket.on('error', () => {});
      clients.push(c);
    }
  }
  // Every client has its first frame (the organism's snapshot) before anything is timed.
  if (url.includes('/ws')) await until(() => clients.every((c) => c.frames > 0), 60_000, 'every client to get its snapshot', 10);
  return clients.length;
}

async function main(): Promise<void> {
  await serverReady(
    { pid: process.pid },
    {
      connect: async (cmd) => connect(String(cmd['url']), Number(cmd['count'])),
      stall: async (cmd) => {
        const socket = await open(String(cmd['url']));
        stalled = { socket, frames: 0, closed: null };
        const s = stalled;
        socket.on('message', () => s.frames++);
        socket.on('close', (code, reason) => (s.closed = { code, reason: String(reason) }));
        socket.on('error', () => {});
        (socket as unknown as { _socket: { pause(): void } })._socket.pause();
        return true;
      },
      reset: async () => {
        measured = 0;
        eluStart = performance.eventLoopUtilization();
        for (const c of clients) c.timed = 0;
        return true;
      },
      collect: async () => {
        const sample = latencies.subarray(0, measured);
        // Latencies in 0.05 ms buckets, so the parent can merge several client processes exactly enough.
        const buckets = new Map<number, number>();
        for (const ms of sample) {
          const key = Math.round(ms * 20);
          buckets.set(key, (buckets.get(key) ?? 0) + 1);
        }
        const timed = clients.map((c) => c.timed);
        return {
          measured,
          elu: performance.eventLoopUtilization(eluStart).utilization,
          histogram: [...buckets],
          p50: percentile(sample, 50),
          p99: percentile(sample, 99),
          max: percentile(sample, 100),
          minPerClient: Math.min(...timed),
          maxPerClient: Math.max(...timed),
          closed: clients.filter((c) => c.closed).length,
          stalled: stalled ? { frames: stalled.frames, closed: stalled.closed } : null,
        };
      },
      close: async () => {
        for (const c of clients) c.socket.terminate();
        stalled?.socket.terminate();
        clients = [];
        stalled = null;
        return true;
      },
    },
  );
  process.on('SIGTERM', () => process.exit(0));
}

main().catch(serverFailed);
