import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { jobYaml, killAll, organismDir, runCli, startCli, startServer, until, type Running } from './processes.js';

/**
 * `organism worker` and `serve --handlers off` as real processes on a fresh PostgreSQL database:
 * the API process journals, the workers deliver (the smoke test of issue 15's cluster mode).
 */
const run = withPostgres('organism worker');

const yaml = (timeout = 30) => `organism:
  name: chain
max_concurrent_handlers: 100
max_concurrent_per_agent: 100
payloads:
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: first
    description: First hop
    payload: Text
    peers: [second]
    handler: ./hops.ts#first
    timeout_seconds: ${timeout}
  - name: second
    description: Second hop
    payload: Text
    peers: [third]
    handler: ./hops.ts#second
  - name: third
    description: Last hop
    payload: Text
    handler: ./hops.ts#third
`;

/** Each hop waits a little (so both workers get work) and logs which process ran it. */
const HOPS = `import { appendFileSync } from 'node:fs';
const log = (self: string, text: string) => appendFileSync(new URL('./deliveries.log', import.meta.url), \`\${self} \${process.pid} \${text}\\n\`);
const pause = () => new Promise((r) => setTimeout(r, 30));
export async function first(p: { text: string }, ctx: { self: string }) { log(ctx.self, p.text); await pause(); return { to: 'second', payload: { text: p.text } }; }
export async function second(p: { text: string }, ctx: { self: string }) { log(ctx.self, p.text); await pause(); return { to: 'third', payload: { text: p.text } }; }
export async function third(p: { text: string }, ctx: { self: string }) { log(ctx.self, p.text); await pause(); }
`;

const LEASE_YAML = `organism:
  name: lease
payloads:
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: slow
    description: Takes a while, then passes on
    payload: Text
    peers: [after]
    handler: ./slow.ts#slow
  - name: after
    description: Records
    payload: Text
    handler: ./slow.ts#after
`;

const SLOW = `import { appendFileSync } from 'node:fs';
const log = (line: string) => appendFileSync(new URL('./deliveries.log', import.meta.url), line + '\\n');
export async function slow(p: { text: string }, ctx: { self: string; attempt: number }) {
  log(\`slow \${process.pid} \${ctx.attempt}\`);
  await new Promise((r) => setTimeout(r, 2500));
  return { to: 'after', payload: { text: p.text } };
}
export function after(p: { text: string }) { log(\`after \${process.pid} \${p.text}\`); }
`;

describe.skipIf(!run)('organism worker in cluster mode (one PostgreSQL store)', () => {
  let db: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    db = await createTestDatabase();
  }, 60_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await db?.drop();
  });

  it('serve --handlers off journals, two workers deliver a 3-hop chain; /workers lists all three; workers drain on SIGTERM', async () => {
    const dir = organismDir(yaml(), { 'hops.ts': HOPS });
    const config = path.join(dir, 'organism.yaml');
    const server = await startServer(config, ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data'), '--name', 'api']);
    const workers: Running[] = [];
    for (const name of ['w1', 'w2']) {
      const w = startCli(['worker', config, '--store', db.url, '--name', name, '--concurrency', '3', '--log-level', 'warn']);
      await until(() => w.output().includes(`organism worker ${name} running chain`), `worker ${name} to start (output: ${w.output()})`, 90_000);
      workers.push(w);
    }
    const threads: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'first', payload: { Text: { text: `m${i}` } } }) });
      expect(res.status).toBe(200);
      threads.push(((await res.json()) as { threadId: string }).threadId);
    }
    for (const id of threads) {
      await until(async () => ((await (await server.api(`/threads/${id}`)).json()) as { status: string }).status === 'completed', `thread ${id} to complete`);
    }
    const lines = readFileSync(path.join(dir, 'deliveries.log'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(36);
    const pids = new Set(lines.map((l) => Number(l.split(' ')[1])));
    const workerPids = workers.map((w) => w.child.pid!);
    // Every delivery ran in a worker (the API process runs no handler), and both took part.
    expect([...pids].every((p) => workerPids.includes(p))).toBe(true);
    expect(pids.size).toBe(2);
    const messages = (await (await server.api(`/threads/${threads[0]}/messages`)).json()) as { messages: Array<{ to: string; state?: string }> };
    expect(messages.messages.map((m) => m.to).sort()).toEqual(['first', 'second', 'third']);

    const listed = (await (await server.api('/workers')).json()) as {
      shared: boolean;
      workers: Array<{ name: string; kind: string; handlers: boolean; alive: boolean; concurrency: number | null }>;
    };
    expect(listed.shared).toBe(true);
    expect(listed.workers.map((w) => [w.name, w.kind, w.handlers, w.alive, w.concurrency]).sort()).toEqual([
      ['api', 'serve', false, true, null],
      ['w1', 'worker', true, true, 3],
      ['w2', 'worker', true, true, 3],
    ]);

    workers[0]!.child.kill('SIGTERM');
    expect(await workers[0]!.exited).toBe(0);
    const after = (await (await server.api('/workers')).json()) as { workers: Array<{ name: string; alive: boolean }> };
    expect(after.workers.find((w) => w.name === 'w1')!.alive).toBe(false);
  }, 240_000);

  it('a worker silent past its lease (SIGSTOP) loses its delivery to another worker: attempt 2 runs there, the late outcome is dropped ("lease lost"), the next hop runs once', async () => {
    const dir = organismDir(LEASE_YAML, { 'slow.ts': SLOW });
    const config = path.join(dir, 'organism.yaml');
    const log = () => {
      try {
        return readFileSync(path.join(dir, 'deliveries.log'), 'utf8').trim().split('\n');
      } catch {
        return [];
      }
    };
    const server = await startServer(config, ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data'), '--lease-seconds', '1']);
    const w1 = startCli(['worker', config, '--store', db.url, '--name', 'w1', '--lease-seconds', '1', '--log-level', 'warn']);
    await until(() => w1.output().includes('organism worker w1 running'), `w1 to start (output: ${w1.output()})`, 90_000);
    const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'slow', payload: { Text: { text: 'once' } } }) });
    const { threadId, messageId } = (await res.json()) as { threadId: string; messageId: string };
    await until(() => log().some((l) => l.startsWith(`slow ${w1.child.pid} 1`)), 'w1 to start the slow delivery');
    w1.child.kill('SIGSTOP');
    try {
      const w2 = startCli(['worker', config, '--store', db.url, '--name', 'w2', '--lease-seconds', '1', '--log-level', 'warn']);
      await until(() => log().some((l) => l.startsWith(`slow ${w2.child.pid} 2`)), `w2 to take the delivery over with attempt 2 (log: ${log().join(' | ')}; output: ${w2.output()})`, 90_000);
    } finally {
      w1.child.kill('SIGCONT');
    }
    await until(() => w1.output().includes('lease lost'), `w1 to drop its late outcome (output: ${w1.output()})`);
    await until(async () => ((await (await server.api(`/threads/${threadId}`)).json()) as { status: string }).status === 'completed', 'the thread to complete');
    expect(
      log().filter((l) => l.startsWith('after ')),
      log().join('\n'),
    ).toHaveLength(1);
    const entry = (await (await server.api(`/journal/${messageId}`)).json()) as { deliveryState: string; attempts: number };
    expect(entry).toMatchObject({ deliveryState: 'ACKED', attempts: 2 });
  }, 240_000);

  it('a worker killed -9 with deliveries in flight is listed not alive, holding nothing once its deliveries are taken back (its last heartbeat said 5)', async () => {
    const dir = organismDir(jobYaml('dead', 'max_concurrent_per_agent: 10\n'), {
      'worker.ts': `export const work = async () => { await new Promise((r) => setTimeout(r, 600_000)); };\n`,
    });
    const config = path.join(dir, 'organism.yaml');
    const server = await startServer(config, ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data'), '--lease-seconds', '1']);
    const w = startCli(['worker', config, '--store', db.url, '--name', 'doomed', '--lease-seconds', '1', '--log-level', 'warn']);
    await until(() => w.output().includes('organism worker doomed running'), `the worker to start (output: ${w.output()})`, 90_000);
    for (let n = 0; n < 5; n++) expect((await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) })).status).toBe(200);
    const listed = async () =>
      ((await (await server.api('/workers')).json()) as { workers: Array<{ name: string; alive: boolean; inFlight: number }> }).workers.find((x) => x.name === 'doomed')!;
    await until(async () => (await listed()).inFlight === 5, 'the worker to report 5 in flight');
    w.child.kill('SIGKILL');
    await w.exited;
    // Dead, it shows what it still holds in the journal (not its last heartbeat's figure): 0 once
    // the lease has passed and its deliveries were taken back.
    const dead = await until(async () => {
      const row = await listed();
      return row.alive || row.inFlight !== 0 ? null : row;
    }, 'the worker to be listed not alive, holding nothing');
    expect(dead).toMatchObject({ alive: false, inFlight: 0 });
    const entries = (await (await server.api('/journal?agent=worker&limit=10')).json()) as { entries: Array<{ deliveryState: string; earlierAttempts: Array<{ outcome: string }> }> };
    expect(entries.entries.filter((e) => e.earlierAttempts.some((a) => a.outcome === 'interrupted'))).toHaveLength(5);
  }, 180_000);

  it('refuses a worker whose organism.yaml differs from the one serve stored (exit 3, naming the difference)', async () => {
    const dir = organismDir(yaml(30), { 'hops.ts': HOPS });
    const server = await startServer(path.join(dir, 'organism.yaml'), ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data')]);
    expect(server.base).toMatch(/^http/);
    const other = organismDir(yaml(60), { 'hops.ts': HOPS });
    const r = runCli(['worker', path.join(other, 'organism.yaml'), '--store', db.url], { timeoutMs: 90_000 });
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/listeners\[first\]\.timeoutSeconds: 60 here, 30 in the database's organism/);
  }, 180_000);

  it('refuses worker and --handlers on the embedded SQLite store (exit 2)', () => {
    const dir = organismDir(yaml(), { 'hops.ts': HOPS });
    const config = path.join(dir, 'organism.yaml');
    const w = runCli(['worker', config], { env: { ORGANISM_STORE: '' }, timeoutMs: 60_000 });
    expect(w.status).toBe(2);
    expect(w.stderr).toMatch(/organism worker needs a shared PostgreSQL store/);
    const s = runCli(['serve', config, '--no-supervisor', '--port', '0', '--handlers', 'off', '--data-dir', path.join(dir, 'data')], { env: { ORGANISM_STORE: '' }, timeoutMs: 60_000 });
    expect(s.status).toBe(2);
    expect(s.stderr).toMatch(/--handlers needs a shared PostgreSQL store/);
  }, 120_000);
});
