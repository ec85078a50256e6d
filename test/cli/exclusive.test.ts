import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { killAll, organismDir, runCli, startServer, until } from './processes.js';

/**
 * `organism serve --store postgres://… --exclusive` (issue 24, item 4) as real processes on a
 * fresh PostgreSQL database each: one process owns the schema and schedules its deliveries
 * itself (the embedded queue over the PostgreSQL journal), recovers what a kill -9 left
 * unfinished, and a second owner or a cluster process on the same schema is refused clearly.
 */
const run = withPostgres('serve --exclusive');

const yaml = `organism:
  name: alone
max_concurrent_handlers: 20
max_concurrent_per_agent: 20
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
  - name: second
    description: Last hop, slow (a kill finds it in flight)
    payload: Text
    handler: ./hops.ts#second
`;

/** The second hop logs when it starts and when it ends, with the process that ran it. */
const HOPS = `import { appendFileSync } from 'node:fs';
const log = (line: string) => appendFileSync(new URL('./deliveries.log', import.meta.url), line + '\\n');
export function first(p: { text: string }) { return { to: 'second', payload: { text: p.text } }; }
export async function second(p: { text: string }) {
  log('start ' + p.text + ' ' + process.pid);
  await new Promise((r) => setTimeout(r, Number(process.env.HOP_MS ?? 0)));
  log('done ' + p.text + ' ' + process.pid);
}
`;

describe.skipIf(!run)('serve --exclusive on PostgreSQL', () => {
  const drops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    killAll();
    for (const drop of drops.splice(0)) await drop();
  });
  async function setup(): Promise<{ url: string; config: string; dir: string; log: () => string[] }> {
    const db = await createTestDatabase();
    drops.push(() => db.drop());
    const dir = organismDir(yaml, { 'hops.ts': HOPS });
    const file = path.join(dir, 'deliveries.log');
    return { url: db.url, config: path.join(dir, 'organism.yaml'), dir, log: () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : []) };
  }
  const serveArgs = (url: string, dir: string) => ['--store', url, '--exclusive', '--data-dir', path.join(dir, 'data')];

  it('serves: /health answers, an inject completes in this process, /workers lists no cluster', async () => {
    const { url, config, dir, log } = await setup();
    const server = await startServer(config, serveArgs(url, dir));
    expect(server.output()).toMatch(/Data: +postgres:\/\/\S+ \(exclusive: this process alone\)/);
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'first', payload: { Text: { text: 'hello' } } }) });
    expect(res.status).toBe(200);
    const { threadId } = (await res.json()) as { threadId: string };
    await until(async () => ((await (await server.api(`/threads/${threadId}`)).json()) as { status: string }).status === 'completed', 'the thread to complete');
    expect(log()).toEqual([`start hello ${server.child.pid}`, `done hello ${server.child.pid}`]);
    expect(await (await server.api('/workers')).json()).toMatchObject({ shared: false });
  }, 180_000);

  it('a kill -9 with deliveries in flight: the restarted serve delivers every acknowledged message (journal recovery)', async () => {
    const { url, config, dir, log } = await setup();
    const first = await startServer(config, serveArgs(url, dir), { env: { HOP_MS: '600000' } });
    const threads: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await first.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'first', payload: { Text: { text: `m${i}` } } }) });
      expect(res.status).toBe(200);
      threads.push(((await res.json()) as { threadId: string }).threadId);
    }
    await until(() => log().filter((l) => l.startsWith('start ')).length === 5, 'the five slow hops to start');
    first.child.kill('SIGKILL');
    await first.exited;
    expect(log().some((l) => l.startsWith('done '))).toBe(false);

    const second = await startServer(config, serveArgs(url, dir), { env: { HOP_MS: '0' } });
    for (const id of threads) {
      await until(async () => ((await (await second.api(`/threads/${id}`)).json()) as { status: string }).status === 'completed', `thread ${id} to complete after the restart`);
    }
    const done = log().filter((l) => l.startsWith('done '));
    expect(done.map((l) => l.split(' ')[1]).sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(done.every((l) => l.endsWith(` ${second.child.pid}`))).toBe(true);
  }, 240_000);

  it('refuses a second serve --exclusive and an organism worker on the held schema (exit 4, one line naming the other mode)', async () => {
    const { url, config, dir } = await setup();
    await startServer(config, serveArgs(url, dir));
    const again = runCli(['serve', config, '--no-supervisor', '--port', '0', '--log-level', 'warn', ...serveArgs(url, dir)], { timeoutMs: 90_000 });
    expect(again.status, again.stderr).toBe(4);
    expect(again.stderr).toMatch(/^organism: Database postgres:\/\/\S+ \(schema public\) is in use by another organism process; stop it or use another database\n$/);

    const worker = runCli(['worker', config, '--store', url, '--log-level', 'warn'], { timeoutMs: 90_000 });
    expect(worker.status, worker.stderr).toBe(4);
    expect(worker.stderr).toMatch(/^organism: Database postgres:\/\/\S+ \(schema public\) is held by one organism process alone \(serve --exclusive\)[^\n]*\n$/);
  }, 240_000);

  it('refuses serve --exclusive on a schema a cluster shares (exit 4, naming the cluster)', async () => {
    const { url, config, dir } = await setup();
    await startServer(config, ['--store', url, '--data-dir', path.join(dir, 'data')]);
    const alone = runCli(['serve', config, '--no-supervisor', '--port', '0', '--log-level', 'warn', ...serveArgs(url, dir)], { timeoutMs: 90_000 });
    expect(alone.status, alone.stderr).toBe(4);
    expect(alone.stderr).toMatch(/^organism: Database postgres:\/\/\S+ \(schema public\) is shared by a cluster of organism processes \(serve and worker without --exclusive\)[^\n]*\n$/);
  }, 240_000);

  it('--exclusive with the SQLite store, or with a cluster flag, is a usage error naming the flags (exit 2)', async () => {
    const dir = organismDir(yaml, { 'hops.ts': HOPS });
    const config = path.join(dir, 'organism.yaml');
    const base = ['serve', config, '--no-supervisor', '--port', '0', '--data-dir', path.join(dir, 'data'), '--exclusive'];
    const sqlite = runCli(base, { env: { ORGANISM_STORE: '' }, timeoutMs: 60_000 });
    expect(sqlite.status).toBe(2);
    expect(sqlite.stderr).toMatch(/^organism: --exclusive needs a PostgreSQL store/);
    const url = 'postgres://nobody@127.0.0.1:1/none'; // refused before any connection
    for (const [flag, value] of [
      ['--concurrency', '2'],
      ['--lease-seconds', '5'],
    ] as const) {
      const r = runCli([...base, '--store', url, flag, value], { timeoutMs: 60_000 });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^organism: --exclusive cannot go with ${flag}:`));
    }
  }, 240_000);
});
