/**
 * Scenario 4: WebSocket fan-out. The organism server (a no-op code listener on the SQLite
 * journal, buildApp, auth on) in one process, `clients` connections on /ws in another; the
 * server injects on a fixed schedule so that its event bus carries `eventsPerSec` events/s,
 * every one a frame to every client. Latency runs from the inject call (its wall time is the
 * payload) to a client's receipt of each message frame. Then the same with one extra client
 * that stops reading. Baseline, same round: a bare `ws` server broadcasting as many frames/s
 * of the same size to as many clients, timed the same way.
 */
import type { DriveResult, OrganismServerInfo, OrganismServerInput } from '../servers/organism-http.js';
import { benchFile, startServer, type RunningServer } from '../lib/child.js';
import { atMost, row, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

interface Collected {
  readonly measured: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly minPerClient: number;
  readonly maxPerClient: number;
  readonly closed: number;
  readonly stalled: { frames: number; closed: { code: number; reason: string } | null } | null;
}

interface Round {
  /** The same run with half the clients (context: where the machine's limit lies). */
  readonly half: Collected;
  readonly eventsPerInject: number;
  readonly injectsPerSec: number;
  readonly organism: Collected & { drive: DriveResult };
  readonly withStall: Collected & { drive: DriveResult };
  readonly bare: Collected & { behindMs: number };
}

const FRAME_BYTES = 520;

async function clientsProcess(): Promise<RunningServer<{ pid: number }>> {
  return startServer<{ pid: number }>(benchFile('children/ws-clients.ts'), {}, { what: 'ws clients' });
}

async function organismRun(scale: Scale, count = scale.ws.clients, stall = true): Promise<Omit<Round, 'bare' | 'half'>> {
  const dataDir = tempDir('ws');
  const input: OrganismServerInput = { dataDir, organism: 'sink', seedThreads: 0 };
  const server = await startServer<OrganismServerInfo>(benchFile('servers/organism-http.ts'), input, { what: 'organism ws server' });
  const clients = await clientsProcess();
  try {
    const url = `ws://127.0.0.1:${server.info.port}/ws?token=${server.info.token}`;
    await clients.request({ cmd: 'connect', url, count });
    // Calibrate: how many bus events (each a frame to every client) one inject makes.
    const warm = await server.request<DriveResult>({ cmd: 'drive', rate: 100, seconds: 1 });
    const eventsPerInject = warm.busEvents / warm.injected;
    const injectsPerSec = scale.ws.eventsPerSec / eventsPerInject;
    await clients.request({ cmd: 'reset' });
    const drive = await server.request<DriveResult>({ cmd: 'drive', rate: injectsPerSec, seconds: scale.ws.durationSec });
    const organism = { ...(await clients.request<Collected>({ cmd: 'collect' })), drive };
    if (!stall) return { eventsPerInject, injectsPerSec, organism, withStall: organism };
    await clients.request({ cmd: 'stall', url });
    await clients.request({ cmd: 'reset' });
    const driveStalled = await server.request<DriveResult>({ cmd: 'drive', rate: injectsPerSec, seconds: scale.ws.durationSec });
    const withStall = { ...(await clients.request<Collected>({ cmd: 'collect' })), drive: driveStalled };
    await clients.request({ cmd: 'close' });
    return { eventsPerInject, injectsPerSec, organism, withStall };
  } finally {
    await clients.stop();
    await server.stop();
    removeDir(dataDir);
  }
}

async function bareRun(scale: Scale): Promise<Round['bare']> {
  const server = await startServer<{ port: number }>(benchFile('servers/bare-ws.ts'), { frameBytes: FRAME_BYTES }, { what: 'bare ws server' });
  const clients = await clientsProcess();
  try {
    await clients.request({ cmd: 'connect', url: `ws://127.0.0.1:${server.info.port}/`, count: scale.ws.clients });
    await server.request({ cmd: 'drive', rate: 100, seconds: 1 });
    await clients.request({ cmd: 'reset' });
    const drive = await server.request<{ behindMs: number }>({ cmd: 'drive', rate: scale.ws.eventsPerSec, seconds: scale.ws.durationSec });
    const collected = await clients.request<Collected>({ cmd: 'collect' });
    await clients.request({ cmd: 'close' });
    return { ...collected, behindMs: drive.behindMs };
  } finally {
    await clients.stop();
    await server.stop();
  }
}

export async function runWs(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const rounds: Round[] = [];
  for (let r = 0; r < scale.rounds; r++) {
    const o = await organismRun(scale);
    const bare = await bareRun(scale);
    const half = (await organismRun(scale, Math.round(scale.ws.clients / 2), false)).organism;
    const round: Round = { ...o, bare, half };
    rounds.push(round);
    const expected = Math.round(o.injectsPerSec * scale.ws.durationSec);
    log(
      `  round ${r + 1}: ${sig(o.eventsPerInject, 3)} events per inject, ${sig(o.injectsPerSec, 3)} injects/s; organism p50 ${o.organism.p50.toFixed(1)} p99 ${o.organism.p99.toFixed(1)} max ${o.organism.max.toFixed(0)} ms ` +
        `(${o.organism.measured.toLocaleString('en-US')} timed frames, per client ${o.organism.minPerClient}-${o.organism.maxPerClient} for ${expected} injects, ${o.organism.closed} closed); ` +
        `with a stalled client p99 ${o.withStall.p99.toFixed(1)} ms (stalled client: ${o.withStall.stalled?.closed ? `closed ${o.withStall.stalled.closed.code} ${o.withStall.stalled.closed.reason}` : 'still open'}); ` +
        `bare ws p50 ${bare.p50.toFixed(1)} p99 ${bare.p99.toFixed(1)} ms; organism with half the clients p99 ${half.p99.toFixed(1)} ms`,
    );
  }
  const bareP99 = { name: `bare ws broadcast, same clients and frames/s: p99`, unit: 'ms', rounds: rounds.map((r) => r.bare.p99) };
  const bareP50 = { name: `bare ws broadcast: p50`, unit: 'ms', rounds: rounds.map((r) => r.bare.p50) };
  const unstalled = { name: 'organism p99 without the stalled client (same round)', unit: 'ms', rounds: rounds.map((r) => r.organism.p99) };
  const clients = scale.ws.clients.toLocaleString('en-US');
  const rate = scale.ws.eventsPerSec.toLocaleString('en-US');
  return {
    scenario: 4,
    title: 'WebSocket fan-out',
    rows: [
      row({ scenario: 4, metric: `Delivery latency p50, ${clients} clients on /ws, ${rate} events/s`, unit: 'ms', rounds: rounds.map((r) => r.organism.p50), baseline: bareP50, target: null }),
      row({ scenario: 4, metric: `Delivery latency p99, ${clients} clients on /ws, ${rate} events/s`, unit: 'ms', rounds: rounds.map((r) => r.organism.p99), baseline: bareP99, target: atMost(100, '<= 100 ms') }),
      row({ scenario: 4, metric: `Delivery latency p99 with half the clients (${Math.round(scale.ws.clients / 2).toLocaleString('en-US')})`, unit: 'ms', rounds: rounds.map((r) => r.half.p99), baseline: bareP99, target: null }),
      row({ scenario: 4, metric: 'The others\' p99 with one stalled client', unit: 'ms', rounds: rounds.map((r) => r.withStall.p99), baseline: unstalled, target: atMost(1.1, '<= 1.10x (10 %)', 'ratio') }),
    ],
    context: { clients: scale.ws.clients, eventsPerSec: scale.ws.eventsPerSec, durationSec: scale.ws.durationSec, frameBytes: FRAME_BYTES, rounds },
    notes: [
      `The organism server is a single no-op code listener on the SQLite journal with authentication on, in its own process; ${clients} clients connect to /ws (every event, no filter) from one other process and get their snapshot first. One inject makes several bus events (message PENDING/DISPATCHED/ACKED, thread and agent-state updates: ${sig(median(rounds.map((r) => r.eventsPerInject)), 3)} measured), each a frame to every client; the server injects on a fixed schedule at ${rate} events/s / that count, for ${scale.ws.durationSec} s after a 1 s warm-up. That is ${(scale.ws.clients * scale.ws.eventsPerSec).toLocaleString('en-US')} frames/s leaving the server.`,
      `Latency: from the wall-clock time of the inject call, carried in the payload, to a client's receipt of each message frame (read from the frame's bytes, no JSON parse on the client); percentiles over every timed frame of every client. The stalled client connects before the second run and pauses its TCP socket; the server's slow-client policy (bounded send buffer, then resync or close) applies to it.`,
      `Baseline: a bare \`ws\` server (no Fastify, no organism) broadcasting ${rate} frames/s of ${FRAME_BYTES} bytes to the same number of clients, each frame carrying its send time, timed the same way. Median of ${scale.rounds} rounds.`,
    ],
    seconds: (performance.now() - started) / 1000,
  };
}
