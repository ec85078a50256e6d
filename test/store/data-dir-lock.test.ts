import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { cliCommand, jobYaml, killAll, organismDir, procState, runCli, startServer, TOKEN, until } from '../cli/processes.js';

const YAML = jobYaml('locked');
const WORKER = 'export const work = () => undefined;\n';

const cleanups: Array<() => void> = [];
afterEach(() => {
  killAll();
  for (const c of cleanups.splice(0)) c();
});

/** `organism serve` on `dataDir` run to completion: for starts that must be refused. */
function serveOnce(config: string, dataDir: string) {
  return runCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--no-supervisor', '--log-level', 'warn'], { timeoutMs: 90_000 });
}

describe('the data-directory lock is held by the kernel', () => {
  it('a start right after kill -9 is never refused, even while the dead holder is an unreaped zombie; a live second process always is, naming its PID', { timeout: 300_000 }, async () => {
    const dir = organismDir(YAML, { 'worker.ts': WORKER });
    const config = path.join(dir, 'organism.yaml');
    const dataDir = path.join(dir, 'data');

    // The first server's parent is a shell that becomes `sleep` and never reaps it: after
    // SIGKILL its PID still answers kill(pid, 0), as a dead worker's does until it is reaped.
    const quoted = cliCommand(['serve', config, '--data-dir', dataDir, '--port', '0', '--no-supervisor', '--log-level', 'warn'])
      .map((a) => `'${a}'`)
      .join(' ');
    const shell = spawn('sh', ['-c', `${quoted} > ${dir}/first.out 2>&1 & echo $!; exec sleep 600`], {
      env: { ...process.env, ORGANISM_API_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    cleanups.push(() => shell.kill('SIGKILL'));
    let shellOut = '';
    shell.stdout!.on('data', (d: Buffer) => (shellOut += d.toString()));
    const firstPid = await until(() => Number(shellOut.trim()) || null, 'the first server to be spawned');
    await until(() => existsSync(`${dir}/first.out`) && readFileSync(`${dir}/first.out`, 'utf8').includes('API:'), 'the first server to listen', 90_000);

    process.kill(firstPid, 'SIGKILL');
    await until(() => procState(firstPid) === 'Z', 'the first server to die (a zombie)');
    expect(() => process.kill(firstPid, 0)).not.toThrow(); // its PID still answers

    // At once: no waiting for staleness, no refusal.
    const second = await startServer(config, ['--data-dir', dataDir]);
    expect(readFileSync(path.join(dataDir, 'organism.pid'), 'utf8').trim()).toBe(String(second.child.pid));

    // A live holder: refused at once, exit 4, with the holder's PID.
    const refused = serveOnce(config, dataDir);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toContain(Errors.STORAGE_LOCKED(dataDir, second.child.pid!).detail);
    expect((await fetch(`${second.base}/health`)).status).toBe(200); // the holder is untouched

    // Killed again, started again at once, several times over.
    let holder = second;
    for (let i = 0; i < 2; i++) {
      holder.child.kill('SIGKILL');
      await holder.exited;
      holder = await startServer(config, ['--data-dir', dataDir]);
      expect((await holder.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n: i } } }) })).status).toBe(200);
    }

    // A clean stop leaves no PID file behind; the lock file stays, empty.
    holder.child.kill('SIGTERM');
    expect(await holder.exited).toBe(0);
    expect(existsSync(path.join(dataDir, 'organism.pid'))).toBe(false);
    expect(statSync(path.join(dataDir, 'organism.lock')).size).toBe(0);
  });

  it('a PID file naming a live process that holds no lock (a reused PID) does not keep the directory', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-reused-'));
    // Both places a PID may be found: the PID file, and a lock file written by earlier versions.
    writeFileSync(path.join(dataDir, 'organism.pid'), `${process.pid}\n`);
    writeFileSync(path.join(dataDir, 'organism.lock'), String(process.pid));
    const script = `import { openSqliteStorage } from ${JSON.stringify(path.resolve('src/store/index.ts'))};
      try { openSqliteStorage({ dataDir: ${JSON.stringify(dataDir)} }); console.log('OPENED ' + process.pid); } catch (e) { console.log('REFUSED ' + e.message); }`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout.trim()).toMatch(/^OPENED \d+$/);
    expect(statSync(path.join(dataDir, 'organism.lock')).size).toBe(0);
  });
});
