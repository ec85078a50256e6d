/**
 * Is the worker's memory growth a leak? Runs the real `organism serve --no-supervisor` (from
 * dist/: `npm run build` first) on the demo organism with its SQLite store, injects `warmup`
 * questions, takes a heap snapshot, injects `count` more in `rounds` rounds (RSS and the JS heap
 * from /metrics after each), takes another, and compares them by constructor (count, self size
 * and retained size). A leak grows with every round; a high-water mark does not.
 *   node --import tsx bench/tools/memory-probe.ts [count=30000] [warmup=2000] [concurrency=32] [rounds=3] [heapMb]
 * (`heapMb`: the server runs with --max-old-space-size=heapMb; `snapshots` 0: RSS and heap
 * figures only, since writing a snapshot itself leaves ~100-150 MB of RSS behind.)
 * The demo's mock latency (200-1500 ms per reply) is set to 0 so the run takes minutes, not
 * hours; everything else is examples/demo as shipped. Snapshots are taken with
 * --heapsnapshot-signal (V8 collects garbage before it writes one); they stay in the printed
 * directory for a closer look in Chrome's DevTools.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { groupSnapshot, type Group } from './heap-groups.js';

const [count = 30_000, warmup = 2_000, concurrency = 32, rounds = 3, heapMb = 0, snapshots = 1] = process.argv.slice(2).map(Number);
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-memory-'));
const demo = readFileSync(path.join(root, 'examples/demo/organism.yaml'), 'utf8').replace(/latency_ms: \{[^}]*\}/, 'latency_ms: 0');
writeFileSync(path.join(dir, 'organism.yaml'), demo);
copyFileSync(path.join(root, 'examples/demo/tools.ts'), path.join(dir, 'tools.ts'));

const TOKEN = 'memory-probe-token';
const child = spawn(
  process.execPath,
  [
    '--heapsnapshot-signal=SIGUSR2',
    ...(heapMb > 0 ? [`--max-old-space-size=${heapMb}`] : []),
    path.join(root, 'bin/organism.js'),
    'serve',
    'organism.yaml',
    '--no-supervisor',
    '--port',
    '0',
    '--data-dir',
    'data',
    '--log-level',
    'warn',
  ],
  { cwd: dir, env: { ...process.env, ORGANISM_API_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
);
let output = '';
child.stdout.on('data', (d: Buffer) => (output += d.toString()));
child.stderr.on('data', (d: Buffer) => (output += d.toString()));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(f: () => Promise<T | null> | T | null, what: string, ms = 600_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await Promise.resolve(f()).catch(() => null);
    if (v) return v;
    if (Date.now() > end || child.exitCode !== null) throw new Error(`no ${what}; server output:\n${output}`);
    await sleep(100);
  }
}

const base = await until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(output)?.[1] ?? null, 'banner', 90_000);
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const organism = async () => (await (await fetch(`${base}/api/v1/organism`, { headers })).json()) as { activeThreads: number; totalMessages: number };

/** The worker's own figures (prom-client's default metrics), in MB. */
async function metrics(): Promise<string> {
  const text = await (await fetch(`${base}/metrics`, { headers })).text();
  const mb = (name: string) => (Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20).toFixed(0);
  return `RSS ${mb('process_resident_memory_bytes')} MB, JS heap ${mb('nodejs_heap_size_used_bytes')} of ${mb('nodejs_heap_size_total_bytes')} MB, external ${mb('nodejs_external_memory_bytes')} MB`;
}

function memory(): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

async function inject(n: number): Promise<void> {
  let next = 0;
  let busy = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      for (;;) {
        const res = await fetch(`${base}/api/v1/inject`, { method: 'POST', headers, body: JSON.stringify({ to: 'researcher', payload: { Question: { text: `question ${i}` } } }) });
        await res.arrayBuffer();
        if (res.status === 200) break;
        if (res.status !== 503) throw new Error(`inject ${i}: HTTP ${res.status}`);
        busy++;
        await sleep(200);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await until(async () => ((await organism()).activeThreads === 0 ? true : null), 'drained organism');
  if (busy > 0) process.stdout.write(`  (${busy} injects answered 503 busy and were retried)\n`);
}

async function snapshot(label: string): Promise<{ file: string; groups: Map<string, Group>; rssMb: number; peakMb: number }> {
  await sleep(2_000); // let timers of the last threads run out
  const beforeSnapshot = memory(); // taking a snapshot raises RSS itself
  const before = new Set(readdirSync(dir));
  child.kill('SIGUSR2');
  const name = await until(() => readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)) ?? null, 'snapshot file');
  const file = path.join(dir, name);
  await until(async () => ((await fetch(`${base}/health`)).ok ? true : null), 'server after the snapshot'); // the snapshot is written on the main thread
  let size = -1;
  await until(() => (size === (size = statSync(file).size) ? true : null), 'complete snapshot');
  const { rssMb, peakMb } = memory();
  process.stdout.write(
    `${label}: RSS ${beforeSnapshot.rssMb.toFixed(0)} MB before the snapshot, ${rssMb.toFixed(0)} MB after (peak ${peakMb.toFixed(0)} MB), snapshot ${(size / 2 ** 20).toFixed(0)} MB\n`,
  );
  return { file, groups: groupSnapshot(readFileSync(file, 'utf8')), rssMb, peakMb };
}

try {
  process.stdout.write(`server pid ${child.pid}, directory ${dir}\n`);
  await inject(warmup);
  await sleep(2_000);
  process.stdout.write(`after ${warmup} injects: ${await metrics()}, RSS peak ${memory().peakMb.toFixed(0)} MB\n`);
  const a = snapshots ? await snapshot(`after ${warmup} injects`) : null;
  const t0 = Date.now();
  for (let r = 1; r <= rounds; r++) {
    await inject(Math.round(count / rounds));
    await sleep(2_000);
    process.stdout.write(`round ${r}: ${warmup + Math.round((count * r) / rounds)} injects, ${await metrics()}, RSS peak ${memory().peakMb.toFixed(0)} MB\n`);
  }
  process.stdout.write(`${count} injects in ${((Date.now() - t0) / 1000).toFixed(0)} s (${(await organism()).totalMessages} messages)\n`);
  if (!a) {
    child.kill('SIGTERM');
    process.exit(0);
  }
  const b = await snapshot(`after ${warmup + count} injects`);
  const total = (g: Map<string, Group>, k: 'self' | 'count') => [...g.values()].reduce((s, x) => s + x[k], 0);
  process.stdout.write(
    `heap: ${(total(a.groups, 'self') / 2 ** 20).toFixed(1)} MB in ${total(a.groups, 'count')} objects -> ${(total(b.groups, 'self') / 2 ** 20).toFixed(1)} MB in ${total(b.groups, 'count')}\n`,
  );
  const rows = [...new Set([...a.groups.keys(), ...b.groups.keys()])].map((k) => {
    const x = a.groups.get(k) ?? { count: 0, self: 0, retained: 0 };
    const y = b.groups.get(k) ?? { count: 0, self: 0, retained: 0 };
    return { k, dCount: y.count - x.count, dSelf: y.self - x.self, dRetained: y.retained - x.retained, y };
  });
  rows.sort((p, q) => Math.abs(q.dRetained) - Math.abs(p.dRetained));
  process.stdout.write('largest changes by constructor (retained size; count and self size beside):\n');
  for (const r of rows.slice(0, 20)) {
    process.stdout.write(
      `  ${r.k.slice(0, 40).padEnd(40)} retained ${(r.dRetained / 1024).toFixed(0).padStart(8)} KB  count ${String(r.dCount).padStart(8)}  self ${(r.dSelf / 1024).toFixed(0).padStart(8)} KB  (now ${r.y.count} objects, ${(r.y.retained / 1024).toFixed(0)} KB retained)\n`,
    );
  }
} finally {
  child.kill('SIGTERM');
}
