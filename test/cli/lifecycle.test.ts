import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { alive, api, cpuShare, jobOrganism, killAll, processTree, servedAt, startCli, until, wakeupsPerSecond } from './processes.js';

/** The parent of a process (from /proc), or null once it is gone. */
function parentOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

afterEach(killAll);

describe('the server process and its supervisor', () => {
  it('a SIGKILLed supervisor takes its server process with it, and a new serve starts at once on the same directory and port', async () => {
    const { config } = jobOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-orphan-'));
    const first = startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--log-level', 'warn']);
    const base = await servedAt(first);
    const call = api(base);
    // Work in flight when the supervisor dies.
    for (let n = 0; n < 20; n++) expect((await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) })).status).toBe(200);

    const supervisor = first.child.pid!;
    const [, serverProcess] = processTree(supervisor);
    expect(serverProcess).toBeDefined();
    first.child.kill('SIGKILL');
    // The server process exits within 2 s by design (a hard exit backs the drain); the deadline here is
    // generous for a loaded machine, and on a server process that ignored its orphaning (it kept
    // serving for minutes) it fails all the same.
    await until(() => !alive(serverProcess!), 'the orphaned server process to exit', 10_000);

    const port = new URL(base).port;
    const second = startCli(['serve', config, '--data-dir', dataDir, '--port', port, '--log-level', 'warn']);
    expect(await servedAt(second)).toBe(base);
    expect(second.output()).not.toContain('in use');
    const health = await until(async () => (await fetch(`${base}/health`)).status === 200, 'the second server');
    expect(health).toBe(true);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 300_000);

  it('connections on their way to a server process that is SIGKILLed are answered by the next one: none is left hanging', async () => {
    const { config } = jobOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-handover-'));
    const server = startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--log-level', 'warn']);
    const base = new URL(await servedAt(server));
    const supervisor = server.child.pid!;
    // Each request on a connection of its own, so every one is handed over by the supervisor.
    const hung: number[] = [];
    const outcomes = new Map<string, number>();
    const one = (n: number) =>
      new Promise<void>((resolve) => {
        const req = httpRequest({ host: base.hostname, port: base.port, path: '/health', agent: false }, (res) => {
          res.resume();
          res.on('end', () => {
            outcomes.set(String(res.statusCode), (outcomes.get(String(res.statusCode)) ?? 0) + 1);
            resolve();
          });
        });
        // Far longer than a server process restart takes on a loaded machine: a request still open
        // then was left with nobody to answer it.
        const timer = setTimeout(() => {
          hung.push(n);
          req.destroy();
        }, 60_000);
        req.on('close', () => clearTimeout(timer));
        req.on('error', (err: NodeJS.ErrnoException) => {
          outcomes.set(err.code ?? 'error', (outcomes.get(err.code ?? 'error') ?? 0) + 1);
          resolve();
        });
        req.end();
      });
    let n = 0;
    let running = true;
    const clients = Array.from({ length: 12 }, async () => {
      while (running) await one(n++);
    });
    for (let kill = 0; kill < 3; kill++) {
      await new Promise((r) => setTimeout(r, 300));
      const [serverProcess] = processTree(supervisor).filter((pid) => pid !== supervisor && parentOf(pid) === supervisor);
      process.kill(serverProcess!, 'SIGKILL');
      await until(() => processTree(supervisor).some((pid) => pid !== serverProcess && parentOf(pid) === supervisor), 'the next server process', 120_000);
      await until(async () => (await fetch(`${base.origin}/health`)).status === 200, 'the next server process to serve');
    }
    running = false;
    await Promise.all(clients);
    expect(hung).toEqual([]);
    expect(outcomes.get('200')).toBeGreaterThan(0);
    expect(server.child.exitCode).toBeNull();
  }, 600_000);

  it('restarts (POST /organism/restart and SIGHUP) refuse no connection while a client injects and reads throughout; every accepted message is ACKED', async () => {
    const { config } = jobOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-restart-'));
    const server = startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--log-level', 'warn', '--drain-timeout', '5']);
    const base = await servedAt(server);
    const call = api(base);
    const bootId = async () => ((await (await call('/organism')).json()) as { bootId: string }).bootId;
    const firstBoot = await until(bootId, 'the server');

    const accepted: string[] = [];
    const refusedWith503: Array<string | null> = [];
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let running = true;
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const describe = (err: unknown) => {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return `${(err as Error).message}: ${cause?.code ?? cause?.message ?? ''}`;
    };
    const injector = (async () => {
      for (let n = 0; running; n++) {
        try {
          const res = await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }) });
          count(res.status);
          if (res.status === 200) accepted.push(((await res.json()) as { messageId: string }).messageId);
          else {
            await res.body?.cancel();
            if (res.status === 503) refusedWith503.push(res.headers.get('retry-after'));
          }
        } catch (err) {
          failures.push(`inject: ${describe(err)}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const reader = (async () => {
      while (running) {
        try {
          const res = await call('/agents');
          count(res.status);
          await res.body?.cancel();
        } catch (err) {
          failures.push(`read: ${describe(err)}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    await until(() => accepted.length >= 20, 'injections before the first restart');
    expect((await call('/organism/restart', { method: 'POST' })).status).toBe(202);
    const secondBoot = await until(async () => {
      const id = await bootId();
      return id !== firstBoot ? id : null;
    }, 'the restart after POST /organism/restart');
    const before = accepted.length;
    await until(() => accepted.length >= before + 20, 'injections served by the new server process');
    server.child.kill('SIGHUP');
    await until(async () => (await bootId()) !== secondBoot, 'the restart after SIGHUP');
    const later = accepted.length;
    await until(() => accepted.length >= later + 20, 'injections after the second restart');
    running = false;
    await Promise.all([injector, reader]);

    expect(failures).toEqual([]);
    expect([...statuses.keys()].every((s) => s === 200 || s === 503)).toBe(true);
    // Injects answered while a server process drained say when to retry.
    expect(refusedWith503.every((h) => h !== null && Number(h) > 0)).toBe(true);
    for (const id of accepted) {
      await until(async () => ((await (await call(`/journal/${id}`)).json()) as { deliveryState: string }).deliveryState === 'ACKED', `message ${id} to be ACKED`);
    }
    expect(server.child.exitCode).toBeNull();
  }, 400_000);
});

describe('signals while a server process boots', () => {
  /** The supervisor's direct children (its server process; a server process's own children are not). */
  const serverProcessesOf = (supervisor: number) => processTree(supervisor).filter((pid) => pid !== supervisor && parentOf(pid) === supervisor);

  it('a SIGHUP while a server process loads its handlers restarts it once it serves, without a crash; SIGHUPs in a storm are one reload', async () => {
    // A handler module that takes 3 s to load and notes each load (by pid) in a file.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-hup-load-'));
    const loads = path.join(dir, 'loads.txt');
    writeFileSync(
      path.join(dir, 'slow.ts'),
      `import { appendFileSync } from 'node:fs';\nappendFileSync(process.env.LOADS_FILE!, process.pid + '\\n');\nAtomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);\nexport const work = async () => undefined;\n`,
    );
    const config = path.join(dir, 'organism.yaml');
    writeFileSync(config, `organism: {name: slow}\npayloads:\n  Job: {fields: {n: integer}}\nlisteners:\n  - name: worker\n    handler: ./slow.ts#work\n    payload: Job\n`);
    const loaded = () => (existsSync(loads) ? readFileSync(loads, 'utf8').trim().split('\n') : []);
    const server = startCli(['serve', config, '--data-dir', path.join(dir, 'data'), '--port', '0', '--log-level', 'warn'], { LOADS_FILE: loads });
    await servedAt(server);

    server.child.kill('SIGHUP');
    // The second server process is loading its handlers (3 s): SIGHUPs now ask for another read.
    await until(() => loaded().length >= 2, 'the second server process to load its handlers', 120_000);
    server.child.kill('SIGHUP');
    server.child.kill('SIGHUP');
    await until(() => loaded().length >= 3, 'the restart the SIGHUPs during the load asked for', 120_000);
    const banners = () => server.output().split('serving (config').length - 1;
    await until(() => banners() >= 3, 'the third server process to serve', 120_000);
    // Both SIGHUPs were one reload: no fourth load.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(loaded()).toHaveLength(3);
    expect(server.output()).not.toContain('worker exited');
    expect(server.child.exitCode).toBeNull();
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 400_000);

  it('a server process whose supervisor dies while it boots exits and never serves on its own', async () => {
    const { config } = jobOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-boot-orphan-'));
    const server = startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--log-level', 'warn']);
    const supervisor = server.child.pid!;
    const serverProcess = await until(() => serverProcessesOf(supervisor)[0], 'the server process', 60_000);
    server.child.kill('SIGKILL');
    await until(() => !alive(serverProcess), 'the orphaned server process to exit', 60_000);
    // The banner is the server process's, printed once it listens.
    expect(server.output()).not.toContain('API:');
  }, 300_000);
});

describe('an idle organism', () => {
  it('sleeps: serve (supervised and not) and run, with nothing to do, use almost no CPU', async () => {
    const dataDir = () => mkdtempSync(path.join(os.tmpdir(), 'organism-idle-'));
    const supervised = startCli(['serve', '--port', '0', '--data-dir', dataDir(), '--log-level', 'warn']);
    const single = startCli(['serve', '--port', '0', '--data-dir', dataDir(), '--no-supervisor', '--log-level', 'warn']);
    const run = startCli(['run', '--log-level', 'warn']); // the demo's flow, then nothing
    await servedAt(supervised);
    await servedAt(single);
    await until(() => run.output().includes('thread completed'), `the demo run (output: ${run.output()})`);
    for (const [name, running] of [
      ['serve', supervised],
      ['serve --no-supervisor', single],
      ['run', run],
    ] as const) {
      // Every process of the tree (supervisor and server process), over a few seconds; the least of a
      // few windows, so the tail of start-up does not count. A spinning pump used 35-95 % of
      // a core here (a fair share of a core even on a loaded machine); idle is about 1 %.
      const shares: number[] = [];
      for (let i = 0; i < 3; i++) shares.push(await cpuShare(running.child.pid!, 3_000));
      expect(Math.min(...shares), `${name}: ${shares.map((s) => s.toFixed(3)).join(', ')} of a core`).toBeLessThan(0.05);
    }
    // Nor does it wake often: prom-client's event-loop delay sampler at its default 10 ms woke
    // an idle serve 100+ times a second (~0.6 % of a core, most of its idle CPU).
    const wakeups: number[] = [];
    for (let i = 0; i < 3; i++) wakeups.push(await wakeupsPerSecond(single.child.pid!, 3_000));
    expect(Math.min(...wakeups), `serve --no-supervisor woke ${wakeups.map((w) => w.toFixed(0)).join(', ')} times a second`).toBeLessThan(40);
  }, 300_000);
});
