/**
 * Scenario 4: WebSocket fan-out. The organism server (a no-op code listener on the SQLite
 * journal, buildApp, auth on) in one process, `clients` connections on /ws in two others; the
 * server injects on a fixed schedule so that its event bus carries `eventsPerSec` events/s,
 * every one a frame to every client. Latency runs from the time the inject was due (carried in
 * the payload) to a client's receipt of each message frame. Then the same with one extra client
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
  /** The busiest client process's event-loop utilization (0-1) over the timed run. */
  readonly elu: number;
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
  readonly bare: Collected & { behindMs: number; serverElu: number };
}

const FRAME_BYTES = 520;

const pct = (v: number): string => `${(v * 100).toFixed(0)} %`;

/**
 * Receiving a million frames a second is more than one Node process can do here (measured: its
 * event loop is 100 % busy), so the clients are spread over several processes, as real clients
 * are spread over machines. Every request goes to each; their latencies are merged.
 */
const CLIENT_PROCESSES = 2;

interface ProcessCollected extends Omit<Collected, 'p50' | 'p99' | 'max'> {
  /** [latency in 0.05 ms, count] pairs. */
  readonly histogram: ReadonlyArray<readonly [number, number]>;
}

class ClientGroup {
  private constructor(private readonly processes: ReadonlyArray<RunningServer<{ pid: number }>>) {}

  static async start(): Promise<ClientGroup> {
    const started = await Promise.allSettled(Array.from({ length: CLIENT_PROCESSES }, () => startServer<{ pid: number }>(benchFile('children/ws-clients.ts'), {}, { what: 'ws clients' })));
    const ok = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(ok.map((p) => p.stop()));
      throw failed.reason;
    }
    return new ClientGroup(ok);
  }

  async connect(url: string, count: number): Promise<void> {
    const n = this.processes.length;
    await Promise.all(this.processes.map((p, i) => p.request({ cmd: 'connect', url, count: Math.floor(count / n) + (i < count % n ? 1 : 0) })));
  }

  /** The stalled client lives in the first process. */
  async stall(url: string): Promise<void> {
    await this.processes[0]!.request({ cmd: 'stall', url });
  }

  async all(cmd: 'reset' | 'close'): Promise<void> {
    await Promise.all(this.processes.map((p) => p.request({ cmd })));
  }

  async collect(): Promise<Collected> {
    const parts = await Promise.all(this.processes.map((p) => p.request<ProcessCollected>({ cmd: 'collect' })));
    const merged = new Map<number, number>();
    for (const part of parts) for (const [key, count] of part.histogram) merged.set(key, (merged.get(key) ?? 0) + count);
    const keys = [...merged.keys()].sort((a, b) => a - b);
    const measured = parts.reduce((sum, p) => sum + p.measured, 0);
    const at = (pct: number): number => {
      const rank = Math.min(measured, Math.max(1, Math.ceil((pct / 100) * measured)));
      let seen = 0;
      for (const key of keys) {
        seen += merged.get(key)!;
        if (seen >= rank) return key / 20;
      }
      return Number.NaN;
    };
    return {
      measured,
      elu: Math.max(...parts.map((p) => p.elu)),
      p50: at(50),
      p99: at(99),
      max: at(100),
      minPerClient: Math.min(...parts.map((p) => p.minPerClient)),
      maxPerClient: Math.max(...parts.map((p) => p.maxPerClient)),
      closed: parts.reduce((sum, p) => sum + p.closed, 0),
      stalled: parts[0]!.stalled,
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
  }
}

async function organismRun(scale: Scale, count = scale.ws.clients, stall = true): Promise<Omit<Round, 'bare' | 'half'>> {
  const dataDir = tempDir('ws');
  const input: OrganismServerInput = { dataDir, organism: 'sink', seedThreads: 0 };
  const server = await startServer<OrganismServerInfo>(benchFile('servers/organism-http.ts'), input, { what: 'organism ws server' });
  const clients = await ClientGroup.start();
  try {
    const url = `ws://127.0.0.1:${server.info.port}/ws?token=${server.info.token}`;
    await clients.connect(url, count);
    // Calibrate: how many bus events (each a frame to every client) one inject makes.
    const warm = await server.request<DriveResult>({ cmd: 'drive', rate: 100, seconds: 1 });
    const eventsPerInject = warm.busEvents / warm.injected;
    const injectsPerSec = scale.ws.eventsPerSec / eventsPerInject;
    await clients.all('reset');
    const drive = await server.request<DriveResult>({ cmd: 'drive', rate: injectsPerSec, seconds: scale.ws.durationSec });
    const organism = { ...(await clients.collect()), drive };
    if (!stall) return { eventsPerInject, injectsPerSec, organism, withStall: organism };
    await clients.stall(url);
    await clients.all('reset');
    const driveStalled = await server.request<DriveResult>({ cmd: 'drive', rate: injectsPerSec, seconds: scale.ws.durationSec });
    const withStall = { ...(await clients.collect()), drive: driveStalled };
    await clients.all('close');
    return { eventsPerInject, injectsPerSec, organism, withStall };
  } finally {
    await clients.stop();
    await server.stop();
    removeDir(dataDir);
  }
}

async function bareRun(scale: Scale): Promise<Round['bare']> {
  const server = await startServer<{ port: number }>(benchFile('servers/bare-ws.ts'), { frameBytes: FRAME_BYTES }, { what: 'bare ws server' });
  const clients = await ClientGroup.start();
  try {
    await clients.connect(`ws://127.0.0.1:${server.info.port}/`, scale.ws.clients);
    await server.request({ cmd: 'drive', rate: 100, seconds: 1 });
    await clients.all('reset');
    const drive = await server.request<{ behindMs: number; elu: number }>({ cmd: 'drive', rate: scale.ws.eventsPerSec, seconds: scale.ws.durationSec });
    const collected = await clients.collect();
    await clients.all('close');
    return { ...collected, behindMs: drive.behindMs, serverElu: drive.elu };
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
        `bare ws p50 ${bare.p50.toFixed(1)} p99 ${bare.p99.toFixed(1)} ms (its sends ended ${bare.behindMs.toFixed(0)} ms behind schedule); organism with half the clients p99 ${half.p99.toFixed(1)} ms; ` +
        `event-loop busy: organism server ${pct(o.organism.drive.elu)} / its clients ${pct(o.organism.elu)}, bare server ${pct(bare.serverElu)} / its clients ${pct(bare.elu)}`,
    );
  }
  const bareP99 = { name: `bare ws broadcast, same clients and frames/s: p99`, unit: 'ms', rounds: rounds.map((r) => r.bare.p99) };
  const bareP50 = { name: `bare ws broadcast: p50`, unit: 'ms', rounds: rounds.map((r) => r.bare.p50) };
  const unstalled = { name: 'organism p99 without the stalled client (same round)', unit: 'ms', rounds: rounds.map((r) => r.organism.p99) };
  const busy = (name: string, values: number[]) => ({ name, unit: '%', rounds: values.map((v) => v * 100) });
  const clients = scale.ws.clients.toLocaleString('en-US');
  const rate = scale.ws.eventsPerSec.toLocaleString('en-US');
  return {
    scenario: 4,
    title: 'WebSocket fan-out',
    rows: [
      row({
        scenario: 4,
        metric: `Delivery latency p50, ${clients} clients on /ws, ${rate} events/s`,
        unit: 'ms',
        rounds: rounds.map((r) => r.organism.p50),
        baseline: bareP50,
        target: null,
      }),
      row({
        scenario: 4,
        metric: `Delivery latency p99, ${clients} clients on /ws, ${rate} events/s`,
        unit: 'ms',
        rounds: rounds.map((r) => r.organism.p99),
        baseline: bareP99,
        target: atMost(100, '<= 100 ms'),
      }),
      row({
        scenario: 4,
        metric: `Delivery latency p99 with half the clients (${Math.round(scale.ws.clients / 2).toLocaleString('en-US')})`,
        unit: 'ms',
        rounds: rounds.map((r) => r.half.p99),
        baseline: bareP99,
        target: null,
      }),
      row({
        scenario: 4,
        metric: `Busiest client process (event-loop utilization), ${clients} clients in ${CLIENT_PROCESSES} processes`,
        unit: '%',
        rounds: rounds.map((r) => r.organism.elu * 100),
        baseline: busy(
          'its clients in the bare broadcast',
          rounds.map((r) => r.bare.elu),
        ),
        target: null,
      }),
      row({
        scenario: 4,
        metric: 'Organism server process busy (event-loop utilization)',
        unit: '%',
        rounds: rounds.map((r) => r.organism.drive.elu * 100),
        baseline: busy(
          'bare ws server',
          rounds.map((r) => r.bare.serverElu),
        ),
        target: null,
      }),
      row({
        scenario: 4,
        metric: "The others' p99 with one stalled client",
        unit: 'ms',
        rounds: rounds.map((r) => r.withStall.p99),
        baseline: unstalled,
        target: atMost(1.1, '<= 1.10x (10 %)', 'ratio'),
      }),
    ],
    context: { clients: scale.ws.clients, eventsPerSec: scale.ws.eventsPerSec, durationSec: scale.ws.durationSec, frameBytes: FRAME_BYTES, rounds },
    notes: [
      `The organism server is a single no-op code listener on the SQLite journal with authentication on, in its own process; ${clients} clients connect to /ws (every event, no filter) from ${CLIENT_PROCESSES} other processes and get their snapshot first. One inject makes several bus events (message PENDING/DISPATCHED/ACKED, thread and agent-state updates: ${sig(median(rounds.map((r) => r.eventsPerInject)), 3)} measured), each a frame to every client; the server injects on a fixed schedule at ${rate} events/s / that count, for ${scale.ws.durationSec} s after a 1 s warm-up. That is ${(scale.ws.clients * scale.ws.eventsPerSec).toLocaleString('en-US')} frames/s leaving the server.`,
      `Latency: from the wall-clock time each inject was due on the schedule, carried in the payload, to a client's receipt of each message frame (read from the frame's bytes, no JSON parse on the client); percentiles over every timed frame of every client. The stalled client connects before the second run and pauses its TCP socket; the server's slow-client policy (bounded send buffer, then resync or close) applies to it.`,
      `Baseline: a bare \`ws\` server (no Fastify, no organism) broadcasting ${rate} frames/s of ${FRAME_BYTES} bytes to the same number of clients (one \`send\` per frame per client), each frame carrying the time it was due, timed the same way; a broadcast that falls behind its schedule shows it as latency. Median of ${scale.rounds} rounds.`,
    ],
    seconds: (performance.now() - started) / 1000,
  };
}
