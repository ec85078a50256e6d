import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';
import { api as apiOf, freePort, jobYaml, killAll, MAIN, organismDir, runCli as cli, startCli, until } from './processes.js';

afterEach(killAll);

/** An organism whose jobs take a while (so restarts find work in flight) and leave a side effect. */
function servedOrganism(): string {
  const dir = organismDir(jobYaml('served', 'max_concurrent_per_agent: 1\n'));
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

describe('organism serve', () => {
  it('restarts on SIGHUP and on POST /organism/restart keeping its PID and losing nothing; stop exits 0', async () => {
    const dir = servedOrganism();
    const port = await freePort();
    const { child, output, exited } = startCli(['serve', path.join(dir, 'organism.yaml'), '--port', String(port), '--log-level', 'warn', '--drain-timeout', '5']);
    const base = `http://127.0.0.1:${port}`;
    const api = apiOf(base);
    const bootId = async () => ((await (await api('/organism')).json()) as { bootId: string }).bootId;

    const firstBoot = await until(bootId, `the server (output: ${output()})`);
    expect(output()).toContain(`API:       ${base}/api/v1`);
    expect(output()).toContain(`WebSocket: ws://127.0.0.1:${port}/ws`);

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
    const dir = servedOrganism();
    const port = await freePort();
    const { child, output, exited } = startCli(['serve', path.join(dir, 'organism.yaml'), '--port', String(port), '--no-supervisor'], { ORGANISM_API_TOKEN: undefined });
    const tokenFile = path.join(dir, '.organism', 'operator-token');
    await until(() => output().includes('Token:'), 'the banner');
    expect(output()).toContain(tokenFile);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/agents`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/agents`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 180_000);

  it('refuses a data directory that is locked, unwritable or holds a corrupt database (exit 4, clear message)', async () => {
    const config = path.join(servedOrganism(), 'organism.yaml');
    const serve = (dataDir: string, wrapper: string[] = []) => cli(['serve', config, '--data-dir', dataDir, '--port', '0', '--no-supervisor'], { wrapper });

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

    // Root writes anywhere: as root the unwritable case runs without the capability to
    // override file modes (setpriv, util-linux), so the directory's mode applies as for anyone.
    // Not as another user: that user may not be able to read the checkout (a clone under a
    // mode-700 directory, anything under /root).
    const parent = mkdtempSync(path.join(os.tmpdir(), 'organism-ro-'));
    chmodSync(parent, 0o555);
    const withoutOverride = process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-dac_override,-dac_read_search', '--'] : [];
    const unwritable = serve(path.join(parent, 'data'), withoutOverride);
    expect(unwritable.status).toBe(4);
    expect(unwritable.stderr).toContain(`Data directory ${path.join(parent, 'data')} is not writable`);
  }, 240_000);

  it('refuses a non-loopback host without auth (exit 5)', async () => {
    const dir = servedOrganism();
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
