/**
 * Scenario 5: boot recovery. Each round prepares a data directory holding a journal of
 * `rows` entries, `pending` of them PENDING (bench/children/recovery.ts), then starts the real
 * `organism serve` on it and times it to serving: from spawning the process to the first
 * 200 from GET /health. The baseline, in the same round, is the same command on an empty
 * data directory. The server then delivers the recovered messages; the time until the journal
 * holds nothing PENDING or DISPATCHED is reported too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RecoveryPrepareInput, RecoveryPrepareResult } from '../children/recovery.js';
import { freePort } from '../lib/port.js';
import { benchFile, runChild } from '../lib/child.js';
import { atMost, row, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig, sleep, wallMs } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILT = path.join(ROOT, 'dist/cli/main.js');
const TOKEN = 'bench-recovery-token';

/** The chain the journal was written by, as organism.yaml with plain .js handlers. */
function writeOrganism(dir: string): string {
  writeFileSync(
    path.join(dir, 'organism.yaml'),
    `organism: {name: bench}
payloads:
  Text: {fields: {text: string}}
listeners:
  - {name: hop1, payload: Text, peers: [hop2], handler: ./chain.js#hop1}
  - {name: hop2, payload: Text, peers: [hop3], handler: ./chain.js#hop2}
  - {name: hop3, payload: Text, handler: ./chain.js#hop3}
`,
  );
  writeFileSync(
    path.join(dir, 'chain.js'),
    `export const hop1 = (payload) => ({ to: 'hop2', payload });
export const hop2 = (payload) => ({ to: 'hop3', payload });
export const hop3 = () => undefined;
`,
  );
  return path.join(dir, 'organism.yaml');
}

async function get(url: string): Promise<{ status: number; body: unknown } | null> {
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: await res.json() };
  } catch {
    return null; // not listening yet
  }
}

/** Operator reads timed on the booted server once its work is done (a big journal must not make them slow). */
const READS = ['/api/v1/messages?limit=50', '/api/v1/messages?limit=50&agent=hop2', '/api/v1/journal/stats', '/api/v1/threads?limit=50'] as const;

interface Boot {
  readonly servingMs: number;
  readonly recoveryMs: number | null;
  readonly drainMs: number | null;
  /** Median wall time of each READS request, one at a time (ms). */
  readonly readsMs: Record<string, number>;
}

async function timeReads(base: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const path of READS) {
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = wallMs();
      const res = await get(`${base}${path}`);
      if (res?.status !== 200) throw new Error(`GET ${path}: ${res?.status ?? 'no answer'}`);
      if (i > 0) times.push(wallMs() - t0); // the first warms the route
    }
    out[path] = median(times);
  }
  return out;
}

/** Starts `organism serve` on `dataDir`; times it to serving and (optionally) to an empty queue. */
async function boot(config: string, dataDir: string, waitForDrain: boolean): Promise<Boot> {
  const port = await freePort();
  const entry = existsSync(BUILT) ? [BUILT] : ['--import', 'tsx', path.join(ROOT, 'src/cli/main.ts')];
  const args = [...entry, 'serve', config, '--data-dir', dataDir, '--port', String(port), '--no-supervisor', '--log-level', 'warn'];
  const t0 = wallMs();
  const child: ChildProcess = spawn(process.execPath, args, { env: { ...process.env, ORGANISM_API_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const base = `http://127.0.0.1:${port}`;
    let servingMs = Number.NaN;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`organism serve exited with ${child.exitCode} before serving`);
      const health = await get(`${base}/health`);
      if (health?.status === 200) {
        servingMs = wallMs() - t0;
        break;
      }
      if (wallMs() - t0 > 120_000) throw new Error('organism serve did not answer /health within 120 s');
      await sleep(2);
    }
    let drainMs: number | null = null;
    let recoveryMs: number | null = null;
    for (;;) {
      const stats = await get(`${base}/api/v1/journal/stats`);
      const body = stats?.body as { counts: Record<string, number>; lastRecovery: { durationMs: number } | null } | undefined;
      recoveryMs = body?.lastRecovery?.durationMs ?? null;
      if (!waitForDrain) break;
      if (body && body.counts['PENDING'] === 0 && body.counts['DISPATCHED'] === 0) {
        drainMs = wallMs() - t0;
        break;
      }
      if (wallMs() - t0 > 300_000) throw new Error('recovered messages not delivered within 300 s');
      await sleep(20);
    }
    return { servingMs, recoveryMs, drainMs, readsMs: await timeReads(base) };
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(killer);
  }
}

export async function runRecovery(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const { rows, pending } = scale.recovery;
  const orgDir = tempDir('recovery-config');
  const config = writeOrganism(orgDir);
  const prepared: RecoveryPrepareResult[] = [];
  const recovering: Boot[] = [];
  const empty: Boot[] = [];
  try {
    for (let r = 0; r < scale.rounds; r++) {
      const dataDir = tempDir('recovery-data');
      const emptyDir = tempDir('recovery-empty');
      try {
        const input: RecoveryPrepareInput = { dataDir, rows, pending };
        const p = await runChild<RecoveryPrepareResult>(benchFile('children/recovery.ts'), input, { timeoutMs: 30 * 60_000, what: 'recovery prepare' });
        prepared.push(p);
        const e = await boot(config, emptyDir, false);
        empty.push(e);
        const b = await boot(config, dataDir, true);
        recovering.push(b);
        log(
          `  round ${r + 1}: ${p.rows.toLocaleString('en-US')} rows (${p.pending.toLocaleString('en-US')} PENDING, ${(p.dbBytes / 2 ** 20).toFixed(0)} MiB, prepared in ${p.prepareSec.toFixed(0)} s): ` +
            `serving after ${b.servingMs.toFixed(0)} ms (journal recovery ${b.recoveryMs ?? '?'} ms; raw open + SELECT ${p.rawSelectMs.toFixed(1)} ms), all delivered after ${b.drainMs?.toFixed(0)} ms; empty directory serving after ${e.servingMs.toFixed(0)} ms; ` +
            `reads then: ${READS.map((path) => `${path} ${b.readsMs[path]!.toFixed(1)} ms (empty ${e.readsMs[path]!.toFixed(1)})`).join(', ')}`,
        );
      } finally {
        removeDir(dataDir);
        removeDir(emptyDir);
      }
    }
  } finally {
    removeDir(orgDir);
  }
  const baseline = { name: 'same command, empty data directory', unit: 'ms', rounds: empty.map((e) => e.servingMs) };
  const size = `${sig(rows / 1e6, 3)}M rows, ${pending.toLocaleString('en-US')} PENDING`;
  return {
    scenario: 5,
    title: 'Boot recovery',
    rows: [
      row({ scenario: 5, metric: `Time to serving with ${size}`, unit: 'ms', rounds: recovering.map((b) => b.servingMs), baseline, target: atMost(2000, '<= 2 s') }),
      row({
        scenario: 5,
        metric: 'Journal recovery inside that boot (read PENDING, re-enqueue)',
        unit: 'ms',
        rounds: recovering.map((b) => b.recoveryMs ?? Number.NaN),
        baseline,
        target: null,
      }),
      row({
        scenario: 5,
        metric: 'Raw floor: new better-sqlite3 connection, SELECT the PENDING rows as recover() does',
        unit: 'ms',
        rounds: prepared.map((p) => p.rawSelectMs),
        baseline: null,
        target: null,
      }),
      ...READS.map((path) =>
        row({
          scenario: 5,
          metric: `GET ${path} on that journal, one request at a time`,
          unit: 'ms',
          rounds: recovering.map((b) => b.readsMs[path]!),
          baseline: { name: 'same request, empty data directory', unit: 'ms', rounds: empty.map((e) => e.readsMs[path]!) },
          target: null,
        }),
      ),
      row({
        scenario: 5,
        metric: `Time until all ${pending.toLocaleString('en-US')} recovered messages went through 3 hops`,
        unit: 'ms',
        rounds: recovering.map((b) => b.drainMs ?? Number.NaN),
        baseline,
        target: null,
      }),
    ],
    context: { rows, pending, prepared, recovering, empty, entry: existsSync(BUILT) ? 'dist/cli/main.js' : 'src/cli/main.ts through tsx' },
    notes: [
      `Each round builds a fresh journal: a real organism (the 3-hop chain of no-op code handlers) runs 1,000 messages, then SQL copies those rows and threads with new ids up to ${rows.toLocaleString('en-US')} entries; the newest ${pending.toLocaleString('en-US')} threads are turned back into undelivered injections (first hop PENDING, later hops removed).`,
      `Time to serving runs from spawning \`organism serve CONFIG --data-dir DIR --no-supervisor\` (${existsSync(BUILT) ? 'the built dist/, as npx organism runs it' : 'through tsx: dist/ was not built'}) to its first 200 from GET /health, polled every 2 ms; it includes Node's start, loading the config and handlers, opening the database and checking its schema version, journal recovery, and listening. The baseline is the same command on an empty data directory, in the same round. "All delivered" runs from the spawn until the journal stats show nothing PENDING or DISPATCHED.`,
      'Once every recovered message is delivered, a few operator reads are timed on the same server, one request at a time (median of 9 after a warm-up), against the same requests on the empty-directory server: what a dashboard polling a big journal costs (better-sqlite3 is synchronous, so a slow read also holds up the pump).',
      'The raw floor opens a new read-only better-sqlite3 connection to the prepared database (OS cache warm, as at boot) and runs the SELECT recover() runs; it has no baseline of its own and is context for the recovery row.',
      `Median of ${scale.rounds} rounds.`,
    ],
    seconds: (performance.now() - started) / 1000,
  };
}
