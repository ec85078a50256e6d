import Database from 'better-sqlite3';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rescueCopy } from '../../src/store/sqlite/rescue.js';
import { BIN, jobYaml, killAll, organismDir, servedAt, startProcess, stopProcess, until } from './processes.js';

const dirs: string[] = [];
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const modeOf = (file: string): string => (statSync(file).mode & 0o777).toString(8);
const WARNING = /data directory .* is readable by other users \(mode 755\)/g;

/** `organism serve` from the build under `umask 000` (so any mode left to the umask shows up as 777/666), with a generated operator token. */
function serve(config: string, dataDir: string) {
  return startProcess('sh', ['-c', 'umask 000; exec "$@"', 'sh', process.execPath, BIN, 'serve', config, '--port', '0', '--log-level', 'warn', '--no-supervisor', '--data-dir', dataDir], {
    env: { ORGANISM_API_TOKEN: undefined },
  });
}

describe('the data directory and its files are private', () => {
  it('serve creates the directory 0700 and its database, -wal, -shm, lock, pid and token files 0600 whatever the umask; an existing open directory is warned about once', {
    timeout: 180_000,
  }, async () => {
    const dir = organismDir(jobYaml('private'), { 'worker.ts': 'export const work = async () => {};\n' });
    dirs.push(dir);
    const dataDir = path.join(dir, 'state', 'data');
    const first = serve(path.join(dir, 'organism.yaml'), dataDir);
    const base = await servedAt(first);
    const token = readFileSync(path.join(dataDir, 'operator-token'), 'utf8').trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const res = await fetch(`${base}/api/v1/inject`, { method: 'POST', headers, body: JSON.stringify({ to: 'worker', payload: { n: 1 } }) });
    expect(res.status).toBe(200);
    const { threadId } = (await res.json()) as { threadId: string };
    await until(async () => ((await (await fetch(`${base}/api/v1/threads/${threadId}`, { headers })).json()) as { status: string }).status === 'completed', 'the thread to complete');

    const files = ['organism.db', 'organism.db-wal', 'organism.db-shm', 'organism.lock', 'organism.pid', 'operator-token'];
    expect(modeOf(dataDir)).toBe('700');
    expect(Object.fromEntries(files.map((f) => [f, modeOf(path.join(dataDir, f))]))).toEqual(Object.fromEntries(files.map((f) => [f, '600'])));
    expect(first.output().match(WARNING)).toBeNull(); // it created the directory itself
    expect(await stopProcess(first)).toBe(0);

    // An existing directory others can read (and a database an earlier run left 0644).
    chmodSync(dataDir, 0o755);
    chmodSync(path.join(dataDir, 'organism.db'), 0o644);
    const second = serve(path.join(dir, 'organism.yaml'), dataDir);
    await servedAt(second);
    expect(second.output().match(WARNING)).toHaveLength(1);
    expect(modeOf(path.join(dataDir, 'organism.db'))).toBe('600');
    expect(modeOf(dataDir)).toBe('755'); // the operator's own directory is left as it is
    expect(await stopProcess(second)).toBe(0);
    expect(second.output().match(WARNING)).toHaveLength(1);
  });

  it('a rescue copy of the database is 0600 however readable its directory', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-rescue-mode-'));
    dirs.push(dir);
    mkdirSync(path.join(dir, 'open'), { mode: 0o755 });
    const db = new Database(path.join(dir, 'source.db'));
    db.exec("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a prompt')");
    const target = path.join(dir, 'open', 'data.rescued.db');
    rescueCopy(db, target);
    db.close();
    expect(modeOf(target)).toBe('600');
    const copy = new Database(target, { readonly: true });
    expect(copy.prepare('SELECT x FROM t').get()).toEqual({ x: 'a prompt' });
    copy.close();
  });
});
