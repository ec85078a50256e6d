import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { newWebhookSecret, WebhookReceiver } from '../support/webhook-receiver.js';
import { killAll, organismDir, startServer, stopProcess, until, type ServerProcess } from './processes.js';

/**
 * Schedules across processes (issue 31): two `serve` processes sharing one PostgreSQL database
 * fire each tick of a 1-second schedule once between them (the tick's row is claimed in the
 * store), and a restart that spans ticks fires one catch-up (or records one skip with
 * `catch_up: false`), however many ticks the downtime spanned.
 */
const run = withPostgres('schedules across processes');

const YAML = `organism:
  name: scheduled
payloads:
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: worker
    description: Logs what it gets
    payload: Text
    handler: ./handlers.ts#worker
schedules:
  - name: tick
    every: 1s
    to: worker
    payload: {Text: {text: tick}}
  - name: quiet
    every: 1s
    to: worker
    payload: {Text: {text: quiet}}
    catch_up: false
`;

const HANDLERS = `import { appendFileSync } from 'node:fs';
export function worker(p: { text: string }, ctx: { threadId: string }) {
  appendFileSync(new URL('./handlers.log', import.meta.url), p.text + ' ' + ctx.threadId + ' ' + process.pid + '\\n');
}
`;

interface Tick {
  schedule: string;
  tick_at: number;
  outcome: string | null;
  late: boolean;
  thread_id: string | null;
}

describe.runIf(run)('schedules on two serve processes sharing PostgreSQL', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    killAll();
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('each tick fires once, not once per process; a restart spanning ticks fires one catch-up (or one skip with catch_up: false)', async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const dir = organismDir(YAML, { 'handlers.ts': HANDLERS });
    const config = path.join(dir, 'organism.yaml');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    cleanup.push(() => client.end());
    const ticks = async (): Promise<Tick[]> => {
      const rows = (await client.query<Tick>('SELECT schedule, tick_at, outcome, late, thread_id FROM schedule_ticks ORDER BY schedule, tick_at')).rows;
      return rows.map((r) => ({ ...r, tick_at: Number(r.tick_at) }));
    };
    const handled = (): string[] => {
      try {
        return readFileSync(path.join(dir, 'handlers.log'), 'utf8').trim().split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };
    const serve = (name: string): Promise<ServerProcess> =>
      startServer(config, ['--store', db.url, '--name', name, '--data-dir', path.join(dir, `data-${name}`), '--log-level', 'info'], { built: true });

    const [a, b] = await Promise.all([serve('a'), serve('b')]);
    // Ten seconds of ticks with both processes up.
    const from = Date.now();
    await until(
      async () => (await ticks()).filter((t) => t.schedule === 'tick' && t.tick_at > from + 1000 && t.outcome === 'fired').length >= 10,
      'ten ticks with both processes up',
      60_000,
    );
    await Promise.all([stopProcess(a), stopProcess(b)]);
    const stoppedAt = Date.now();
    // An on-time tick is no news at the default log level (a 1 s schedule would write a line a second).
    for (const p of [a, b]) expect(p.output()).not.toContain('schedule tick fired');
    const before = await ticks();

    // Each claimed tick ran its handler once: as many handler runs as fired ticks, one thread each.
    const fired = before.filter((t) => t.outcome === 'fired');
    const threads = fired.map((t) => t.thread_id);
    expect(new Set(threads).size).toBe(fired.length);
    const runs = handled();
    expect(runs.length).toBe(fired.length);
    expect(new Set(runs.map((line) => line.split(' ')[1])).size).toBe(runs.length);
    expect(new Set(runs.map((line) => line.split(' ')[1]))).toEqual(new Set(threads));
    // A tick a second, each claimed once between the two processes (none lost while both ran).
    const tickTimes = fired.filter((t) => t.schedule === 'tick' && t.tick_at > from + 1000).map((t) => t.tick_at);
    const span = (Math.max(...tickTimes) - Math.min(...tickTimes)) / 1000 + 1;
    expect(tickTimes.length).toBeGreaterThanOrEqual(Math.floor(span * 0.8));
    expect(tickTimes.length).toBeLessThanOrEqual(span);

    // Down across at least three ticks, then one process again.
    await until(() => Date.now() > stoppedAt + 3_500 || null, 'three ticks of downtime', 10_000);
    const restartedAt = Date.now();
    const lastBefore = (name: string) => Math.max(...before.filter((t) => t.schedule === name).map((t) => t.tick_at));
    const again = await serve('a');
    await until(async () => (await ticks()).filter((t) => t.tick_at > restartedAt && t.outcome === 'fired').length >= 4, 'ticks after the restart', 60_000);
    const secondStop = Date.now();
    await stopProcess(again);
    // The catch-up after the downtime is told.
    expect(again.output()).toContain('missed schedule tick fired (catch-up)');

    const after = await ticks();
    // The ticks after the last one before the stop: the first is the one catch-up for all those
    // missed (three or more), the next ones are on time again.
    const since = (name: string) => after.filter((t) => t.schedule === name && t.tick_at > lastBefore(name));
    for (const [name, outcome] of [
      ['tick', 'fired'],
      ['quiet', 'skipped'],
    ] as const) {
      const [catchUp, ...onTime] = since(name);
      expect(catchUp, name).toMatchObject({ outcome, late: true });
      expect(catchUp!.tick_at - lastBefore(name), name).toBeGreaterThanOrEqual(3000);
      expect(catchUp!.tick_at, name).toBeGreaterThan(restartedAt - 1000);
      expect(onTime.length, name).toBeGreaterThanOrEqual(1);
      expect(
        onTime.filter((t) => t.late),
        name,
      ).toEqual([]);
      // The newest tick may still be injecting when this reads (outcome null), or have been
      // refused by the stop (failed, as documented); every other settled one fired.
      const settled = onTime.filter((t) => t.outcome !== null && !(t.outcome === 'failed' && t.tick_at >= secondStop - 1500));
      expect(settled.length, name).toBeGreaterThanOrEqual(1);
      expect(
        settled.map((t) => t.outcome),
        name,
      ).toEqual(settled.map(() => 'fired'));
    }
    // catch_up: false records the skip without a thread.
    expect(since('quiet')[0]!.thread_id).toBeNull();
    // Every fired tick's thread ran once, but for a tick fired just before the stop that was not
    // claimed yet: its delivery waits in the journal, PENDING, for the next process (none lost).
    const firedAll = after.filter((t) => t.outcome === 'fired');
    const ran = handled().map((line) => line.split(' ')[1]!);
    expect(new Set(ran).size).toBe(ran.length);
    const notRun = firedAll.filter((t) => !ran.includes(t.thread_id!));
    expect(ran.length).toBe(firedAll.length - notRun.length);
    for (const t of notRun) expect(t.tick_at, 'a fired tick that did not run').toBeGreaterThanOrEqual(secondStop - 3000);
    const waiting = (await client.query<{ state: string }>('SELECT state FROM journal WHERE thread_id = ANY($1::text[])', [notRun.map((t) => t.thread_id)])).rows;
    expect(waiting.map((r) => r.state)).toEqual(notRun.map(() => 'PENDING'));
  }, 240_000);

  it('webhooks on two serve processes: each event is sent by one of them, once, signed; none lost while the receiver answers 500', async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const secret = newWebhookSecret();
    const receiver = new WebhookReceiver(secret);
    let down = true;
    receiver.status = () => (down ? 500 : 200);
    const url = await receiver.start();
    cleanup.push(() => receiver.close());
    const yaml = `${YAML.replace(/schedules:[\s\S]*$/, '')}webhooks:
  - name: ops
    url: ${url}
    events: [thread_completed]
    secret_env: CLI_WEBHOOK_SECRET
    retry: {initial_seconds: 0.2, max_seconds: 1, max_attempts: 1000}
`;
    const dir = organismDir(yaml, { 'handlers.ts': HANDLERS });
    const config = path.join(dir, 'organism.yaml');
    const serve = (name: string): Promise<ServerProcess> =>
      startServer(config, ['--store', db.url, '--name', name, '--data-dir', path.join(dir, `data-${name}`)], { built: true, env: { CLI_WEBHOOK_SECRET: secret } });
    const [a, b] = await Promise.all([serve('a'), serve('b')]);
    const threads: string[] = [];
    for (let i = 0; i < 10; i++) {
      const server = i % 2 === 0 ? a : b;
      const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Text: { text: `job-${i}` } } }) });
      expect(res.status).toBe(200);
      threads.push(((await res.json()) as { threadId: string }).threadId);
    }
    await until(() => receiver.refusedTries >= 20 || null, 'the receiver to refuse tries', 60_000);
    down = false;
    await until(() => receiver.ofType('thread_completed').length >= 10 || null, 'every thread_completed', 60_000);
    const pending = async () => ((await (await a.api('/webhooks')).json()) as { webhooks: Array<{ pending: number; delivered: number }> }).webhooks[0]!;
    await until(async () => (await pending()).pending === 0 || null, 'nothing pending', 30_000);
    expect(await pending()).toMatchObject({ delivered: 10 });
    expect(new Set(receiver.ofType('thread_completed').map((w) => w.body.data['id']))).toEqual(new Set(threads));
    expect(receiver.badSignatures).toEqual([]);
    expect(receiver.duplicates).toBe(0);
    await Promise.all([stopProcess(a), stopProcess(b)]);
  }, 240_000);
});
