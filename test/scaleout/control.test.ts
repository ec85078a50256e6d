import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { alive, until } from '../cli/processes.js';
import { withPostgres } from '../store/contract/backends.js';
import { clusterYaml, startCluster, type Cluster, type WorkerRow } from './cluster.js';

/**
 * Control reaches every process: the operator talks to `serve --handlers off`, the handlers
 * run on workers (`--concurrency 1` each, so two long handlers sit on two different workers).
 */
describe.runIf(withPostgres('scale-out control'))('control across processes (PostgreSQL, serve --handlers off + workers)', () => {
  // A cluster per test: a control that does not reach a worker leaves handlers running there.
  let c: Cluster;
  beforeEach(async () => {
    c = await startCluster({ workers: 2, concurrency: 1 });
  }, 300_000);
  afterEach(() => c?.close());

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const post = (p: string) => c.api(p, { method: 'POST' });
  const live = (rows: readonly WorkerRow[]) => rows.filter((w) => w.stoppedAt === null && w.alive !== false && alive(w.pid));

  it('kill aborts an in-flight handler running on a worker, and only that thread', async () => {
    const a = await c.inject('slow', { ms: 600_000 });
    const b = await c.inject('slow', { ms: 600_000 });
    const starts = await until(() => {
      const s = c.runs().filter((r) => r.listener === 'slow' && r.ev === 'start');
      return s.length >= 2 ? s : null;
    }, 'both slow handlers to start');
    // One on each worker: neither runs in the process the operator talks to.
    expect(new Set(starts.map((s) => s.pid))).toEqual(new Set(c.workers.map((w) => w.pid)));

    const sentAt = Date.now();
    expect((await post(`/threads/${a.threadId}/kill`)).status).toBe(200);
    const aborted = await until(() => c.runs().find((r) => r.ev === 'aborted' && r.messageId === a.messageId), 'the handler of the killed thread to be aborted', 60_000);
    // The issue asks for "within 1 s"; reported, not asserted (a loaded machine decides timings).
    console.info(`scale-out kill: the handler on pid ${aborted.pid} saw its abort ${aborted.t - sentAt} ms after the kill request was sent (${aborted.reason})`);
    expect(aborted.pid).toBe(starts.find((s) => s.messageId === a.messageId)!.pid);
    const thread = (await (await c.api(`/threads/${a.threadId}`)).json()) as { status: string };
    expect(thread.status).toBe('killed');
    // The other thread's handler, on the other worker, runs on.
    expect(c.runs().some((r) => r.messageId === b.messageId && r.ev !== 'start')).toBe(false);

    expect((await post(`/threads/${b.threadId}/kill`)).status).toBe(200);
    await until(() => c.runs().find((r) => r.ev === 'aborted' && r.messageId === b.messageId), 'the second handler to be aborted', 60_000);
    await c.drained();
    // A killed delivery is not claimed again.
    for (const m of [a.messageId, b.messageId]) expect(c.runs().filter((r) => r.messageId === m && r.ev === 'start')).toHaveLength(1);
    const rows = await c.sql<{ state: string }>('SELECT state FROM journal WHERE id = ANY($1)', [[a.messageId, b.messageId]]);
    expect(rows.map((r) => r.state)).toEqual(['FAILED', 'FAILED']);
  }, 300_000);

  it('pause holds messages on every worker, also on a worker started later; resume releases them', async () => {
    expect((await post('/agents/quick/pause')).status).toBe(200);
    const sent = await Promise.all(Array.from({ length: 6 }, (_, i) => c.inject('quick', { text: `held-${i}` })));
    const ranQuick = () => c.runs().filter((r) => r.listener === 'quick');
    const pendingCount = async () => (await c.sql<{ n: string }>(`SELECT count(*) AS n FROM journal WHERE id = ANY($1) AND state = 'PENDING'`, [sent.map((s) => s.messageId)]))[0]!.n;

    // A holding check needs a window: several of the workers' claim polls (1 s each) pass in it.
    await sleep(3_000);
    expect(ranQuick()).toEqual([]);
    expect(Number(await pendingCount())).toBe(sent.length);

    const late = await c.startWorker('late');
    await sleep(3_000);
    expect(ranQuick()).toEqual([]);
    expect(Number(await pendingCount())).toBe(sent.length);
    const agent = (await (await c.api('/agents/quick')).json()) as { state: string };
    expect(agent.state).toBe('paused');

    expect((await post('/agents/quick/resume')).status).toBe(200);
    await until(() => sent.every((s) => ranQuick().some((r) => r.messageId === s.messageId && r.ev === 'end')), 'the held messages to run after resume', 120_000);
    await c.drained();
    expect(ranQuick().filter((r) => r.ev === 'start')).toHaveLength(sent.length);
    // They ran on workers (the late one included among the candidates), never on serve.
    const workerPids = new Set(c.workers.map((w) => w.pid));
    expect(ranQuick().every((r) => workerPids.has(r.pid))).toBe(true);
    expect(workerPids.has(late.pid)).toBe(true);
  }, 300_000);

  it('reload reaches every worker: each reports the new config hash and runs the new listener', async () => {
    const before = live(await c.listWorkers());
    expect(before.filter((w) => w.kind === 'worker')).toHaveLength(c.workers.length);
    const oldHashes = new Set(before.map((w) => w.configHash));
    expect(oldHashes.size).toBe(1);
    const oldHash = [...oldHashes][0]!;
    expect(oldHash).toBeTruthy();

    // The workers read the same file here (on other machines each would have its copy, updated first).
    writeFileSync(c.config, clusterYaml('  - name: added\n    handler: ./handlers.ts#quick\n    payload: Ping\n'));
    const res = await post('/organism/reload');
    const body = (await res.json()) as { success: boolean; added: string[] };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.success).toBe(true);
    expect(body.added).toEqual(['added']);

    const after = await until(
      async () => {
        const rows = live(await c.listWorkers());
        const serve = rows.find((w) => w.kind === 'serve' && w.pid === c.serve.child.pid);
        if (!serve?.configHash || serve.configHash === oldHash) return null;
        const workers = rows.filter((w) => w.kind === 'worker');
        return workers.length === c.workers.length && workers.every((w) => w.configHash === serve.configHash) ? rows : null;
      },
      'every worker to report the reloaded config hash',
      60_000,
    );
    expect(new Set(after.map((w) => w.configHash)).size).toBe(1);

    // The new listener exists on the workers: its messages are claimed and run there.
    const sent = await Promise.all(Array.from({ length: 4 }, (_, i) => c.inject('added', { text: `new-${i}` })));
    await until(() => sent.every((s) => c.runs().some((r) => r.messageId === s.messageId && r.ev === 'end')), 'the new listener to run', 120_000);
    const pids = new Set(
      c
        .runs()
        .filter((r) => r.listener === 'added')
        .map((r) => r.pid),
    );
    for (const pid of pids) expect(c.workers.map((w) => w.pid)).toContain(pid);
  }, 300_000);
});
