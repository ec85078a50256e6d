import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openSqliteStorage } from '../../src/store/index.js';
import type { Message } from '../../src/core/message.js';
import { killAll, organismDir, startServer, TOKEN, until, type ServerProcess } from './processes.js';

/**
 * Storage faults against the real `organism serve` process and its real SQLite files: the data
 * directory deleted under it, a full file system (a small tmpfs), damaged database pages.
 */

const mounts: string[] = [];
afterEach(() => {
  killAll();
  for (const mnt of mounts.splice(0)) spawnSync('umount', ['-l', mnt]);
});

/**
 * One code listener. Jobs with n >= 1000 wait for a `gate` file beside the config (all of
 * them released in the same tick, so their acks share one transaction), mark that they
 * returned with a \`returned-N\` file there, and answer with a large result (their ack needs
 * fresh disk space); the others return at once.
 */
function gatedOrganism(): { dir: string; config: string; open(): void } {
  const dir = organismDir(
    `organism: {name: faults}
max_concurrent_per_agent: 16
payloads:
  Job: {fields: {n: integer, note: {type: string, optional: true}}}
  Done: {fields: {text: string}}
listeners:
  - name: worker
    handler: ./worker.ts#work
    payload: Job
    timeout_seconds: 600
`,
    {
      'worker.ts': `import { existsSync, writeFileSync } from 'node:fs';
const gate = new URL('./gate', import.meta.url);
let released: Promise<void> | null = null;
const opened = () => (released ??= new Promise<void>((resolve) => {
  const look = () => (existsSync(gate) ? resolve() : setTimeout(look, 20));
  look();
}));
export const work = async (payload: { n: number }) => {
  if (payload.n < 1000) return;
  await opened();
  writeFileSync(new URL(\`./returned-\${payload.n}\`, import.meta.url), '');
  return { payloadType: 'Done', payload: { text: 'r'.repeat(100_000) } };
};
`,
    },
  );
  return { dir, config: path.join(dir, 'organism.yaml'), open: () => writeFileSync(path.join(dir, 'gate'), '') };
}

async function inject(server: ServerProcess, n: number): Promise<Response> {
  return server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) });
}

async function injected(server: ServerProcess, n: number): Promise<string> {
  const res = await inject(server, n);
  expect(res.status).toBe(200);
  return ((await res.json()) as { messageId: string }).messageId;
}

async function stateOf(server: ServerProcess, id: string): Promise<string> {
  return ((await (await server.api(`/journal/${id}`)).json()) as { deliveryState: string }).deliveryState;
}

async function health(server: ServerProcess): Promise<{ status: number; body: { status: string; code?: string; detail?: string } }> {
  const res = await fetch(`${server.base}/health`);
  return { status: res.status, body: (await res.json()) as { status: string; code?: string; detail?: string } };
}

/** The server's JSON log lines at error level (pino level 50) or above. */
function errorLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => typeof entry['level'] === 'number' && entry['level'] >= 50);
}

/** Sends a WebSocket inject and returns the reply to it. */
async function wsInject(base: string): Promise<Record<string, unknown>> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, { headers: { authorization: `Bearer ${TOKEN}` } });
  try {
    return await new Promise((resolve, reject) => {
      ws.on('error', reject);
      ws.on('open', () => ws.send(JSON.stringify({ cmd: 'inject', id: 'i1', to: 'worker', payload: { Job: { n: 1 } } })));
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Record<string, unknown>;
        if (frame['id'] === 'i1') resolve(frame);
      });
    });
  } finally {
    ws.close();
  }
}

describe('the data directory deleted under a running server', () => {
  it('is noticed: injects (REST and WebSocket) and /health answer 503 naming it, one error line; what was acknowledged is saved to a rescue copy and the server exits 4', async () => {
    const org = gatedOrganism();
    const parent = mkdtempSync(path.join(os.tmpdir(), 'organism-lost-'));
    const dataDir = path.join(parent, 'data');
    const server = await startServer(org.config, ['--data-dir', dataDir, '--drain-timeout', '120']);
    const early = [await injected(server, 1), await injected(server, 2)];
    for (const id of early) await until(async () => (await stateOf(server, id)) === 'ACKED', 'the first jobs to be acknowledged');
    // In flight when the directory goes: the drain waits for it, and its ack must be kept.
    const inFlight = await injected(server, 1000);
    await until(async () => (await stateOf(server, inFlight)) === 'DISPATCHED', 'the gated job to start');

    rmSync(dataDir, { recursive: true, force: true });

    const sick = await until(
      async () => {
        const h = await health(server);
        return h.status === 503 ? h : null;
      },
      '/health to report the loss',
      30_000,
    );
    expect(sick.body).toMatchObject({ status: 'unhealthy', code: 'STORAGE_LOST' });
    expect(sick.body.detail).toContain(dataDir);

    const refused = await inject(server, 3);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    const body = (await refused.json()) as { code: string; detail: string };
    expect(body.code).toBe('STORAGE_LOST');
    expect(body.detail).toContain(dataDir);
    const wsReply = await wsInject(server.base);
    expect(wsReply['event']).toBe('error');
    expect(String(wsReply['error'])).toContain(dataDir);

    org.open();
    expect(await exitOf(server)).toBe(4);
    // Loud once: the one error-level line is the loss, naming the directory.
    const errors = errorLines(server.output());
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'STORAGE_LOST' });
    expect(String(errors[0]!['msg'])).toContain(dataDir);

    // The rescue copy, beside the deleted directory, holds every acknowledged message.
    const copies = readdirSync(parent).filter((name) => /^data\.rescued-.*\.db$/.test(name));
    expect(copies).toHaveLength(1);
    expect(server.output()).toContain(path.join(parent, copies[0]!));
    const restored = path.join(parent, 'restored');
    mkdirSync(restored);
    copyFileSync(path.join(parent, copies[0]!), path.join(restored, 'organism.db'));
    const second = await startServer(org.config, ['--data-dir', restored]);
    for (const id of [...early, inFlight]) expect(await stateOf(second, id)).toBe('ACKED');
    expect(((await (await second.api('/journal/stats')).json()) as { counts: Record<string, number> }).counts).toMatchObject({ PENDING: 0, DISPATCHED: 0, ACKED: 4 });
  }, 240_000);

  it('under the supervisor the whole serve exits 4 once, without restarting the server process', async () => {
    const org = gatedOrganism();
    const parent = mkdtempSync(path.join(os.tmpdir(), 'organism-lost-'));
    const dataDir = path.join(parent, 'data');
    const server = await startServer(org.config, ['--data-dir', dataDir], { supervisor: true });
    await injected(server, 1);
    // The lock file replaced (another file under its name): as lost as a deleted directory.
    rmSync(path.join(dataDir, 'organism.lock'));
    writeFileSync(path.join(dataDir, 'organism.lock'), '');
    expect(await exitOf(server)).toBe(4);
    expect(server.output()).not.toMatch(/restarting in/);
    expect(errorLines(server.output()).filter((e) => e['code'] === 'STORAGE_LOST')).toHaveLength(1);
  }, 240_000);
});

describe('a full disk', () => {
  it('refuses injects with 507 and Retry-After, reports /health degraded, and finishes the deliveries whose acks failed once space returns', async (ctx) => {
    const mnt = mkdtempSync(path.join(os.tmpdir(), 'organism-full-'));
    if (process.getuid?.() !== 0) return ctx.skip(); // mounting a tmpfs needs root (CI runs as root)
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mnt]);
    if (mounted.status !== 0) return ctx.skip(); // a container without CAP_SYS_ADMIN: cannot mount
    mounts.push(mnt);
    const org = gatedOrganism();
    const dataDir = path.join(mnt, 'data');
    const server = await startServer(org.config, ['--data-dir', dataDir]);
    const accepted = [await injected(server, 1)];
    const gated: string[] = [];
    for (let n = 1000; n < 1008; n++) gated.push(await injected(server, n));
    accepted.push(...gated);
    await until(async () => (await Promise.all(gated.map((id) => stateOf(server, id)))).every((s) => s === 'DISPATCHED'), 'the gated jobs to start');

    const filler = fill(mnt);
    let full: Response | null = null;
    for (let n = 2000; n < 2200 && !full; n++) {
      const res = await inject(server, n);
      if (res.status === 200) accepted.push(((await res.json()) as { messageId: string }).messageId);
      else full = res;
    }
    expect(full?.status).toBe(507);
    expect(Number(full!.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await full!.json()) as { code: string; detail: string };
    expect(body.code).toBe('STORAGE_FULL');
    expect(body.detail).toContain(dataDir);
    expect(body.detail).toMatch(/full/);
    expect(await health(server)).toMatchObject({ status: 503, body: { status: 'degraded', code: 'STORAGE_FULL' } });
    // Known full: refused at once (no write tried), the same way.
    expect((await inject(server, 3)).status).toBe(507);

    // The handlers finish while the disk is full: their acks (with a 100 KB result each) fail.
    org.open();
    await until(() => gated.every((_, i) => existsSync(path.join(org.dir, `returned-${1000 + i}`))), 'the gated handlers to return');
    for (const id of gated) expect(await stateOf(server, id)).toBe('DISPATCHED');

    rmSync(filler);
    await until(async () => (await Promise.all(accepted.map((id) => stateOf(server, id)))).every((s) => s === 'ACKED'), 'every accepted message to be ACKED', 60_000);
    await until(async () => {
      const stats = (await (await server.api('/journal/stats')).json()) as { counts: Record<string, number> };
      return stats.counts['PENDING'] === 0 && stats.counts['DISPATCHED'] === 0;
    }, 'the journal to drain (the results to the caller acknowledged too)');
    expect((await health(server)).status).toBe(200);
    expect((await inject(server, 4)).status).toBe(200);
    expect(errorLines(server.output()).filter((e) => e['code'] === 'STORAGE_FULL')).toHaveLength(1);
  }, 240_000);
});

describe('damaged database pages', () => {
  it('answer 503 STORAGE_CORRUPT naming the file on the routes that read them, and /health says so', async () => {
    const org = gatedOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-corrupt-'));
    const ids = journalOf(dataDir, 2_000);
    const file = path.join(dataDir, 'organism.db');
    const damaged = ids[1_000]!;
    damagePageHolding(file, `MARK-${String(1_000).padStart(6, '0')}-`);

    const server = await startServer(org.config, ['--data-dir', dataDir]);
    expect((await health(server)).status).toBe(200); // nothing damaged has been read yet
    expect((await server.api('/journal?limit=10')).status).toBe(200); // the newest page is whole

    for (const p of ['/journal?limit=10&offset=1990', `/journal/${damaged}`]) {
      const res = await server.api(p);
      expect(res.status, p).toBe(503);
      const body = (await res.json()) as { code: string; detail: string };
      expect(body.code).toBe('STORAGE_CORRUPT');
      expect(body.detail).toContain(file);
      expect(body.detail).toMatch(/move the file away/);
    }
    const h = await health(server);
    expect(h).toMatchObject({ status: 503, body: { status: 'unhealthy', code: 'STORAGE_CORRUPT' } });
    expect(h.body.detail).toContain(file);
  }, 240_000);
});

/** The server's exit code; fails (rather than hang) if it does not exit within a minute. */
function exitOf(server: ServerProcess): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the server did not exit; output:\n${server.output()}`)), 60_000);
  });
  return Promise.race([server.exited, late]).finally(() => clearTimeout(timer));
}

/** Fills the file system at `dir` to the last byte; returns the filler file. */
function fill(dir: string): string {
  const file = path.join(dir, 'filler');
  const fd = openSync(file, 'w');
  try {
    for (const size of [1 << 20, 64 << 10, 4 << 10, 512, 1]) {
      const chunk = Buffer.alloc(size, 1);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

/** A data directory whose journal holds `count` ACKED entries, each payload marked with its number. */
function journalOf(dataDir: string, count: number): string[] {
  const storage = openSqliteStorage({ dataDir });
  const messages: Message[] = Array.from({ length: count }, (_, i) => ({
    id: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
    threadId: `thread-${i}`,
    from: 'api',
    to: 'worker',
    payloadType: 'Job',
    payload: { n: i, note: `MARK-${String(i).padStart(6, '0')}-${'y'.repeat(400)}` },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: {},
    attempt: 1,
  }));
  void storage.journal.pending(messages);
  for (const m of messages) void storage.journal.acked(m, [], []);
  storage.close(); // flushes the queued writes and checkpoints the WAL into the file
  return messages.map((m) => m.id);
}

/** Overwrites the database page holding `marker` with garbage. */
function damagePageHolding(file: string, marker: string): void {
  const bytes = readFileSync(file);
  const at = bytes.indexOf(marker);
  expect(at).toBeGreaterThan(0);
  const pageSize = bytes.readUInt16BE(16);
  const page = Math.floor(at / pageSize);
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, page * pageSize);
  } finally {
    closeSync(fd);
  }
  expect(existsSync(`${file}-wal`)).toBe(false);
}
