import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { privatePostgresAvailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { alive, api, jobYaml, killAll, organismDir, startBuiltCli, until, type Running } from './processes.js';

/**
 * A clustered organism (`serve --handlers off`, two idle workers and a busy one, real processes
 * from the build) on a PostgreSQL server of the test's own, which is restarted (fast and
 * immediate) and held down past the lease: every process rides it out, says once that the
 * database went and once that it is back, and what is injected afterwards is delivered.
 */

const LEASE_SECONDS = '3';

const YAML = jobYaml('restart', 'max_concurrent_handlers: 20\nmax_concurrent_per_agent: 20\n', '    timeout_seconds: 600\n');

/** A job with n < 0 waits for the file gate-<-n> (so a worker is busy through an outage); others end at once. */
const WORKER = `import { existsSync } from 'node:fs';
export const work = async (p: { n: number }) => {
  if (p.n >= 0) return;
  const gate = new URL('./gate-' + -p.n, import.meta.url);
  while (!existsSync(gate)) await new Promise((r) => setTimeout(r, 50));
};
`;

interface LogEntry {
  readonly level: number;
  readonly msg: string;
  readonly [key: string]: unknown;
}

function logOf(p: Running): LogEntry[] {
  return p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogEntry);
}

const GONE = /^PostgreSQL cannot be reached/;
const BACK = /^PostgreSQL answers again/;
const NO_AUTOVACUUM = /^PostgreSQL runs no autovacuum on the journal/;

describe.skipIf(!privatePostgresAvailable)('a clustered organism through PostgreSQL restarts and outages', () => {
  let postgres: PrivatePostgres;
  let url: string;
  let dir: string;
  let serve: Running;
  let base: string;
  const workers: Array<{ name: string; p: Running }> = [];

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    postgres.psql('CREATE DATABASE organism');
    url = postgres.urlFor('organism');
    dir = organismDir(YAML, { 'worker.ts': WORKER });
  }, 120_000);
  afterAll(() => {
    killAll();
    postgres?.destroy();
  });
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail' || process.env['SHOW_OUTPUT']) {
      console.log(`--- serve\n${serve?.output()}`);
      for (const w of workers) console.log(`--- ${w.name}\n${w.p.output()}`);
    }
  });

  const processes = () => [{ name: 'serve', p: serve }, ...workers];
  const call = () => api(base);

  async function inject(n: number): Promise<string> {
    const res = await call()('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) });
    expect(res.status, await res.clone().text()).toBe(200);
    return ((await res.json()) as { messageId: string }).messageId;
  }

  async function states(ids: readonly string[]): Promise<Map<string, string>> {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    await c.connect();
    try {
      const rows = (await c.query<{ id: string; state: string }>('SELECT id, state FROM journal WHERE id = ANY($1)', [ids])).rows;
      return new Map(rows.map((r) => [r.id, r.state]));
    } finally {
      await c.end();
    }
  }

  async function allAcked(ids: readonly string[], what: string): Promise<void> {
    await until(
      async () => {
        const s = await states(ids);
        return ids.every((id) => s.get(id) === 'ACKED');
      },
      what,
      120_000,
    );
  }

  /** Every process logged `n` "gone" and `n` "back" lines: it noticed each outage and its end. */
  async function eachSaw(n: number): Promise<void> {
    for (const { name, p } of processes()) {
      const exited = p.exited.then((code) => Promise.reject(new Error(`${name} exited (code ${code}) during the outage`)));
      exited.catch(() => undefined);
      await Promise.race([until(() => logOf(p).filter((e) => BACK.test(e.msg)).length >= n, `${name} to log that PostgreSQL is back (${n})`, 120_000), exited]);
    }
  }

  function expectAliveAndQuiet(outages: number): void {
    for (const { name, p } of processes()) {
      expect(p.child.exitCode, `${name} exited`).toBeNull();
      expect(alive(p.child.pid!), `${name} is gone`).toBe(true);
      const log = logOf(p);
      expect(
        log.filter((e) => GONE.test(e.msg)),
        `${name}: one "gone" line per outage`,
      ).toHaveLength(outages);
      expect(
        log.filter((e) => BACK.test(e.msg)),
        `${name}: one "back" line per outage`,
      ).toHaveLength(outages);
      // Nothing else at warn or above: the outage is told once, not by every part that met it.
      // (The start's own notice that the server runs no autovacuum, on servers that run none, is not about outages.)
      const noise = log.filter((e) => e.level >= 40 && !GONE.test(e.msg) && !BACK.test(e.msg) && !NO_AUTOVACUUM.test(e.msg));
      expect(
        noise.map((e) => e.msg),
        `${name}: other warnings`,
      ).toEqual([]);
    }
  }

  it('serve --handlers off, two idle workers and a busy one ride out restarts (fast, immediate) and a 15 s outage; injects after each are ACKED', async () => {
    const common = ['--store', url, '--lease-seconds', LEASE_SECONDS, '--log-level', 'info'];
    const config = path.join(dir, 'organism.yaml');
    serve = startBuiltCli(['serve', config, '--port', '0', '--no-supervisor', '--handlers', 'off', '--data-dir', mkdtempSync(path.join(os.tmpdir(), 'organism-restart-')), ...common]);
    base = await until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(serve.output())?.[1], 'serve to listen', 90_000);

    // The busy worker takes the gated jobs first (one per outage), then the idle ones join.
    const busy = startBuiltCli(['worker', config, '--name', 'busy', '--concurrency', '3', ...common]);
    workers.push({ name: 'busy', p: busy });
    await until(() => busy.output().includes('organism worker busy running'), 'the busy worker to start', 90_000);
    const gated = [await inject(-1), await inject(-2), await inject(-3)];
    await until(
      async () => {
        const rows = (await (await call()('/workers')).json()) as { workers: Array<{ name: string; inFlight: number }> };
        return rows.workers.find((w) => w.name === 'busy')?.inFlight === 3;
      },
      'the busy worker to run the three gated jobs',
      60_000,
    );
    for (const name of ['idle-1', 'idle-2']) {
      const w = startBuiltCli(['worker', config, '--name', name, ...common]);
      workers.push({ name, p: w });
      await until(() => w.output().includes(`organism worker ${name} running`), `${name} to start`, 90_000);
    }
    // Everyone works before the first outage.
    await allAcked([await inject(1), await inject(2)], 'injects before any outage');

    const outages: Array<{ what: string; run: () => Promise<void> }> = [
      { what: 'fast restart', run: async () => postgres.restart('fast') },
      { what: 'immediate restart', run: async () => postgres.restart('immediate') },
      {
        what: '15 s outage (past the 3 s lease)',
        run: async () => {
          postgres.stop('fast');
          const down = Date.now();
          // The busy worker's job ends while the database is away: its outcome waits for it.
          writeFileSync(path.join(dir, 'gate-3'), '');
          await until(() => logOf(serve).filter((e) => GONE.test(e.msg)).length === 3, 'serve to notice the outage', 60_000);
          // Whatever needs the database answers the same while it is away: 503 STORAGE_UNAVAILABLE with Retry-After.
          for (const [route, init] of [
            ['/threads', {}],
            [`/journal/${gated[2]}`, {}],
            ['/workers', {}],
            ['/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n: 7 } } }) }],
          ] as const) {
            const res = await call()(route, init);
            const body = (await res.json()) as { code: string; detail: string };
            expect([route, res.status, body.code, res.headers.get('retry-after')]).toEqual([route, 503, 'STORAGE_UNAVAILABLE', '5']);
            expect(body.detail).toMatch(/^Database postgres:\/\/postgres@127\.0\.0\.1:\d+\/organism cannot be reached/);
          }
          // The outage's length (past the lease) is the point here, not a wait for an event.
          await new Promise((r) => setTimeout(r, Math.max(0, 15_000 - (Date.now() - down))));
          postgres.start();
        },
      },
    ];
    for (const [i, outage] of outages.entries()) {
      await outage.run();
      await eachSaw(i + 1);
      expectAliveAndQuiet(i + 1);
      // The busy worker's gated job of this round ends; it, and new injects, end ACKED.
      writeFileSync(path.join(dir, `gate-${i + 1}`), '');
      const after = [];
      for (let n = 0; n < 6; n++) after.push(await inject(100 * (i + 1) + n));
      await allAcked([gated[i]!, ...after], `the gated job and injects after the ${outage.what}`);
      expectAliveAndQuiet(i + 1);
    }
    // The busy worker kept its deliveries through every outage, the one past its lease too:
    // the others, cut off as long, gave it a lease to renew before taking them back.
    const attempts = await (async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query<{ attempt: number }>('SELECT attempt FROM journal WHERE id = ANY($1) ORDER BY seq', [gated])).rows.map((r) => r.attempt);
      } finally {
        await c.end();
      }
    })();
    expect(attempts).toEqual([1, 1, 1]);
  }, 600_000);
});
