import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';

const MAIN = path.resolve('src/cli/main.ts');
const TOKEN = 'test-operator-token-123';
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

function cli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function organismDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-serve-'));
  writeFileSync(
    path.join(dir, 'organism.yaml'),
    `organism: {name: served}
max_concurrent_per_agent: 1
payloads:
  Job: {fields: {n: integer}}
listeners:
  - name: worker
    handler: ./worker.ts#work
    payload: Job
`,
  );
  // Each job takes a while (so restarts find work in flight) and leaves a side effect.
  writeFileSync(
    path.join(dir, 'worker.ts'),
    `import { appendFileSync } from 'node:fs';
export const work = async (payload: Record<string, unknown>, ctx: { messageId: string }) => {
  await new Promise((r) => setTimeout(r, 60));
  appendFileSync(${JSON.stringify(path.join(dir, 'done.log'))}, ctx.messageId + '\\n');
};
`,
  );
  return dir;
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('organism serve', () => {
  it('restarts on SIGHUP and on POST /organism/restart keeping its PID and losing nothing; stop exits 0', async () => {
    const dir = organismDir();
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', path.join(dir, 'organism.yaml'), '--port', String(port), '--log-level', 'warn', '--drain-timeout', '5'], {
      env: { ...process.env, ORGANISM_API_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const base = `http://127.0.0.1:${port}`;
    const api = (p: string, init: RequestInit = {}) =>
      fetch(`${base}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });
    const bootId = async () => ((await (await api('/organism')).json()) as { bootId: string }).bootId;

    const firstBoot = await until(bootId, `the server (output: ${output})`);
    expect(output).toContain(`API:       ${base}/api/v1`);
    expect(output).toContain(`WebSocket: ws://127.0.0.1:${port}/ws`);

    const injectJobs = async (from: number, count: number) => {
      const ids: string[] = [];
      for (let n = from; n < from + count; n++) {
        const res = await api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) });
        expect(res.status).toBe(200);
        ids.push(((await res.json()) as { messageId: string }).messageId);
      }
      return ids;
    };
    const done = () => (existsSync(path.join(dir, 'done.log')) ? readFileSync(path.join(dir, 'done.log'), 'utf8').split('\n').filter(Boolean) : []);

    // SIGHUP with work queued and in flight.
    const batch1 = await injectJobs(0, 15);
    child.kill('SIGHUP');
    const secondBoot = await until(async () => {
      const id = await bootId();
      return id !== firstBoot ? id : null;
    }, 'the restart after SIGHUP');
    expect(child.exitCode).toBeNull(); // same process: the supervisor kept its PID

    // POST /organism/restart with more work queued.
    const batch2 = await injectJobs(100, 15);
    const restart = await api('/organism/restart', { method: 'POST' });
    expect(restart.status).toBe(202);
    expect(await restart.json()).toEqual({ success: true, status: 'restarting' });
    await until(async () => ((await bootId()) !== secondBoot ? true : null), 'the restart after POST');
    expect(child.exitCode).toBeNull();

    // Nothing acknowledged was lost: every injected job ran (at least once) across both restarts.
    const all = [...batch1, ...batch2];
    await until(async () => all.every((id) => done().includes(id)), 'every job to finish');
    expect(new Set(done()).size).toBeGreaterThanOrEqual(all.length);

    const stop = await api('/organism/stop', { method: 'POST' });
    expect(await stop.json()).toEqual({ success: true, status: 'stopping' });
    expect(await exited).toBe(0);
  }, 300_000);

  it('creates a 0600 operator token in the data directory when none is configured', async () => {
    const dir = organismDir();
    const port = await freePort();
    const env = { ...process.env };
    delete env['ORGANISM_API_TOKEN'];
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', path.join(dir, 'organism.yaml'), '--port', String(port), '--no-supervisor'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const tokenFile = path.join(dir, '.organism', 'operator-token');
    await until(async () => output.includes('Token:'), 'the banner');
    expect(output).toContain(tokenFile);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/agents`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/agents`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 180_000);

  it('refuses a data directory that is locked, unwritable or holds a corrupt database (exit 4, clear message)', async () => {
    const config = path.join(organismDir(), 'organism.yaml');
    const serve = (dataDir: string, options: { uid?: number; gid?: number } = {}) =>
      spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'serve', config, '--data-dir', dataDir, '--port', '0', '--no-supervisor'], {
        encoding: 'utf8',
        env: { ...process.env, ORGANISM_API_TOKEN: TOKEN },
        timeout: 120_000,
        ...options,
      });

    const held = openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'organism-locked-')) });
    try {
      const locked = serve(held.dataDir);
      expect(locked.status).toBe(4);
      expect(locked.stderr).toContain(`pid ${process.pid}`);
    } finally {
      held.close();
    }

    const corrupt = mkdtempSync(path.join(os.tmpdir(), 'organism-corrupt-'));
    writeFileSync(path.join(corrupt, DATABASE_FILE), 'this is not a database, just text that is long enough to be read as a header');
    const bad = serve(corrupt);
    expect(bad.status).toBe(4);
    expect(bad.stderr).toContain('is not a valid organism database');
    expect(bad.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace

    // Root writes anywhere, so the unwritable case runs as nobody when the test runs as root.
    const parent = mkdtempSync(path.join(os.tmpdir(), 'organism-ro-'));
    chmodSync(parent, 0o555);
    chmodSync(path.dirname(config), 0o755);
    const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const unwritable = serve(path.join(parent, 'data'), asNobody);
    expect(unwritable.status).toBe(4);
    expect(unwritable.stderr).toContain(`Data directory ${path.join(parent, 'data')} is not writable`);
  }, 240_000);

  it('refuses a non-loopback host without auth (exit 5)', async () => {
    const dir = organismDir();
    const refused = cli(['serve', path.join(dir, 'organism.yaml'), '--host', '0.0.0.0', '--no-auth', '--no-supervisor']);
    expect(refused.status).toBe(5);
    expect(refused.stderr).toContain('refusing to bind 0.0.0.0 with authentication disabled');
  }, 180_000);
});

describe('organism check and init', () => {
  it('check prints every problem with file and line, exit 3; a valid file exits 0', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-check-'));
    const file = path.join(dir, 'organism.yaml');
    writeFileSync(file, 'organism: {name: x}\nmax_hopz: 3\nlisteners:\n  - name: a\n    peers: [ghost]\n');
    const r = cli(['check', file]);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain(`${file}:2:1: max_hopz:`);
    expect(r.stderr).toMatch(/max_hops/);
    expect(r.stderr).toContain('ghost');
  }, 180_000);

  it('init writes a starter organism that checks clean and runs as written', () => {
    const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'organism-init-')), 'starter');
    expect(cli(['init', dir]).status).toBe(0);
    expect(cli(['check', path.join(dir, 'organism.yaml')]).status).toBe(0);
    const run = cli(['run', path.join(dir, 'organism.yaml'), '--once', '--inject', 'assistant={"text":"count these four words"}']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('assistant -> counter Count');
    expect(run.stdout).toContain('thread completed');
    expect(cli(['init', dir]).status).toBe(1); // never overwrites
  }, 120_000);

  it('run on the bundled demo completes a multi-hop flow offline', () => {
    const cwd = mkdtempSync(path.join(os.tmpdir(), 'organism-demo-'));
    // Run from an unrelated directory, so the loader is named by its full path.
    const tsx = pathToFileURL(path.resolve('node_modules/tsx/dist/loader.mjs')).href;
    const r = spawnSync(process.execPath, ['--import', tsx, MAIN, 'run', '--once'], { cwd, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('researcher -> writer Findings');
    expect(r.stdout).toContain('writer -> announcer Announcement');
    expect(r.stdout).toContain('thread completed');
  }, 180_000);
});
