import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { privatePostgresAvailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { api, jobYaml, killAll, organismDir, startBuiltCli, until, type Running } from './processes.js';

/**
 * Cluster mode, real processes on a PostgreSQL server of the test's own:
 * - a worker frozen (SIGSTOP) between its claim and the handler's start, past its lease, while
 *   another worker takes the delivery back, runs and acks it: once thawed it does not run it
 *   again (an acked delivery never runs again);
 * - a handler that meets the database unreachable (here: reading its history during an outage)
 *   runs again once it answers, and the delivery ends ACKED, its thread completed, not in error.
 */

const YAML = jobYaml('held', '', '    timeout_seconds: 600\n');

/** Each start is a line of starts.log; a job with n < 0 waits for gate-<-n>, then reads its history. */
const WORKER = `import { appendFileSync, existsSync } from 'node:fs';
export const work = async (p: { n: number }, ctx: { messageId: string; attempt: number; history(): Promise<unknown[]> }) => {
  appendFileSync(new URL('./starts.log', import.meta.url), JSON.stringify({ id: ctx.messageId, attempt: ctx.attempt, pid: process.pid }) + '\\n');
  if (p.n >= 0) return;
  const gate = new URL('./gate-' + -p.n, import.meta.url);
  while (!existsSync(gate)) await new Promise((r) => setTimeout(r, 20));
  await ctx.history();
};
`;

interface Start {
  readonly id: string;
  readonly attempt: number;
  readonly pid: number;
}

describe.skipIf(!privatePostgresAvailable)('claims a clustered organism holds (real processes)', () => {
  let postgres: PrivatePostgres;
  const running: Array<{ name: string; p: Running }> = [];

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
  }, 120_000);
  afterAll(() => {
    killAll();
    postgres?.destroy();
  });
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') for (const r of running) console.log(`--- ${r.name}\n${r.p.output()}`);
    running.length = 0;
  });

  async function organism(database: string, lease: string) {
    postgres.psql(`CREATE DATABASE ${database}`);
    const url = postgres.urlFor(database);
    const dir = organismDir(YAML, { 'worker.ts': WORKER });
    writeFileSync(path.join(dir, 'starts.log'), '');
    const config = path.join(dir, 'organism.yaml');
    const common = ['--store', url, '--lease-seconds', lease, '--log-level', 'info'];
    const serve = startBuiltCli(['serve', config, '--port', '0', '--no-supervisor', '--handlers', 'off', '--data-dir', mkdtempSync(path.join(os.tmpdir(), 'organism-held-')), ...common]);
    running.push({ name: 'serve', p: serve });
    const base = await until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(serve.output())?.[1], 'serve to listen', 90_000);
    const worker = async (name: string) => {
      const w = startBuiltCli(['worker', config, '--name', name, ...common]);
      running.push({ name, p: w });
      await until(() => w.output().includes(`organism worker ${name} running`), `${name} to start`, 90_000);
      return w;
    };
    const inject = async (n: number) => {
      const res = await api(base)('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) });
      expect(res.status, await res.clone().text()).toBe(200);
      return (await res.json()) as { messageId: string; threadId: string };
    };
    const db = new pg.Client({ connectionString: url });
    db.on('error', () => {});
    await db.connect();
    const entry = async (id: string) =>
      (await db.query<{ state: string; attempt: number; failure_reason: string | null }>('SELECT state, attempt, failure_reason FROM journal WHERE id = $1', [id])).rows[0];
    const starts = (): Start[] =>
      readFileSync(path.join(dir, 'starts.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Start);
    return { url, dir, base, db, worker, inject, entry, starts };
  }

  it('a worker frozen between its claim and the handler, past its lease, does not run the delivery the other worker took back and acked', async () => {
    const o = await organism('frozen', '2');
    const w1 = await o.worker('w1');
    // Hold the claim lock: w1's claim of the next inject waits for it inside its one statement.
    const locker = new pg.Client({ connectionString: o.url });
    locker.on('error', () => {});
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(`SELECT pg_advisory_xact_lock(hashtext('organism:claim:' || current_schema()))`);
    const { messageId } = await o.inject(1);
    await until(
      async () => {
        const r = await o.db.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%organism_claim(%' AND pid <> pg_backend_pid()`);
        return r.rows.length > 0;
      },
      'w1 to wait for the claim lock',
      30_000,
    );
    // Frozen with its claim under way: the server completes it, the answer waits in the socket.
    w1.child.kill('SIGSTOP');
    try {
      await locker.query('COMMIT');
      await until(async () => (await o.entry(messageId))?.state === 'DISPATCHED', 'the claim to commit for the frozen w1', 30_000);
      // w2 joins, takes the claim back once w1's lease ran out, runs and acks it (attempt 2).
      await o.worker('w2');
      await until(async () => (await o.entry(messageId))?.state === 'ACKED', 'w2 to run and ack the delivery', 60_000);
    } finally {
      w1.child.kill('SIGCONT');
    }
    // Thawed, w1 reads its claim's answer: it confirms the claim first, finds it taken back, and does not start.
    await until(
      () => w1.output().includes('was taken back meanwhile; not run here') || o.starts().some((s) => s.id === messageId && s.pid === w1.child.pid),
      'w1 to drop the claim (or run it)',
      60_000,
    );
    expect(o.starts().filter((s) => s.id === messageId)).toEqual([{ id: messageId, attempt: 2, pid: running.find((r) => r.name === 'w2')!.p.child.pid }]);
    // And it goes on working.
    const after = await o.inject(2);
    await until(async () => (await o.entry(after.messageId))?.state === 'ACKED', 'a later inject to be ACKED', 60_000);
    await locker.end();
    await o.db.end();
  }, 240_000);

  it('a handler that meets the database unreachable runs again once it answers: ACKED, thread completed, not in error', async () => {
    const o = await organism('outage', '2');
    await o.worker('w');
    const { messageId, threadId } = await o.inject(-1);
    await until(() => o.starts().some((s) => s.id === messageId), 'the handler to start', 60_000);
    await o.db.end();
    postgres.stop('fast');
    // The handler reads its history while the database is away: STORAGE_UNAVAILABLE inside the handler.
    appendFileSync(path.join(o.dir, 'gate-1'), '');
    await until(() => o.starts().filter((s) => s.id === messageId).length >= 2, 'the handler to run again while the database is away', 60_000);
    postgres.start();
    const db = new pg.Client({ connectionString: o.url });
    db.on('error', () => {});
    await db.connect();
    try {
      const entry = await until(
        async () => {
          const r = (await db.query<{ state: string; attempt: number; failure_reason: string | null }>('SELECT state, attempt, failure_reason FROM journal WHERE id = $1', [messageId]))
            .rows[0];
          return r && (r.state === 'ACKED' || r.state === 'FAILED') ? r : null;
        },
        'the delivery to end',
        120_000,
      );
      expect(entry).toEqual({ state: 'ACKED', attempt: 1, failure_reason: null });
      const thread = await until(
        async () => {
          const r = (await db.query<{ status: string; error: string | null }>('SELECT status, error FROM threads WHERE id = $1', [threadId])).rows[0];
          return r && r.status !== 'active' ? r : null;
        },
        'the thread to finish',
        60_000,
      );
      expect(thread).toEqual({ status: 'completed', error: null });
    } finally {
      await db.end();
    }
  }, 240_000);
});
