import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../cli/processes.js';

/**
 * A PostgreSQL server (initdb calls it a cluster) of a test's (or the chaos run's) own: `initdb` + `pg_ctl` on a
 * temporary directory and a free loopback port. Tests that stop or restart the database use
 * one of these, never the machine's shared server, so other test files keep running.
 *
 * As root (CI runs as root) the server runs as the `postgres` user: initdb refuses root.
 */

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** A URL for another database of this server. */
  urlFor(database: string): string;
  /** Runs SQL through psql on the server's `postgres` database (admin work: CREATE DATABASE ...). */
  psql(sql: string): string;
  /** Stops the server: `fast` (clients told, as `pg_ctlcluster restart` does) or `immediate` (a crash). */
  stop(mode?: 'fast' | 'immediate'): void;
  /** Starts it again on the same port and data. */
  start(): void;
  /** stop + start. */
  restart(mode?: 'fast' | 'immediate'): void;
  /** Stops the server (if up) and deletes its files. */
  destroy(): void;
}

function binDir(): string {
  const fromConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const candidates: string[] = [];
  const root = '/usr/lib/postgresql';
  // Debian's server binaries live per version; pg_config (libpq-dev) may name another dir.
  if (existsSync(root)) {
    for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) candidates.push(path.join(root, v, 'bin'));
  }
  if (fromConfig.status === 0) candidates.push(fromConfig.stdout.trim());
  const dir = candidates.find((d) => existsSync(path.join(d, 'initdb')) && existsSync(path.join(d, 'pg_ctl')));
  if (!dir) throw new Error('initdb/pg_ctl not found (install Debian package postgresql)');
  return dir;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = execFileSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' }).trim();
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Whether a test can start a private PostgreSQL server here (in CI it must: a missing server fails it). */
export const privatePostgresAvailable = process.env['CI'] === 'true' || existsSync('/usr/lib/postgresql') || existsSync('/usr/bin/pg_config');

const live = new Set<PrivatePostgres>();
let exitHookSet = false;

export async function startPrivatePostgres(options: { settings?: Record<string, string> } = {}): Promise<PrivatePostgres> {
  const bin = binDir();
  const owner = postgresUser();
  const base = mkdtempSync(path.join(os.tmpdir(), 'organism-pg-'));
  const dataDir = path.join(base, 'data');
  const logFile = path.join(base, 'server.log');
  if (owner) chownSync(base, owner.uid, owner.gid);
  const run = (cmd: string, args: string[], allowFail = false): string => {
    const r = spawnSync(path.join(bin, cmd), args, {
      encoding: 'utf8',
      cwd: base,
      ...(owner ?? {}),
      env: { ...process.env, PGDATABASE: 'postgres', PGUSER: 'postgres', LC_ALL: 'C' },
    });
    if (r.status !== 0 && !allowFail) {
      throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
    }
    return r.stdout;
  };
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: base,
    fsync: 'off',
    full_page_writes: 'off',
    max_connections: '200',
    ...options.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let up = false;
  const server: PrivatePostgres = {
    url,
    port,
    dataDir,
    urlFor: (database) => `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    psql(sql) {
      return run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-Atc', sql]);
    },
    stop(mode = 'fast') {
      if (!up) return;
      run('pg_ctl', ['-D', dataDir, '-m', mode, '-w', 'stop']);
      up = false;
    },
    start() {
      if (up) return;
      run('pg_ctl', ['-D', dataDir, '-l', logFile, '-o', serverOptions, '-w', '-t', '60', 'start']);
      up = true;
    },
    restart(mode = 'fast') {
      server.stop(mode);
      server.start();
    },
    destroy() {
      if (up) run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], true);
      up = false;
      live.delete(server);
      rmSync(base, { recursive: true, force: true });
    },
  };
  server.start();
  live.add(server);
  if (!exitHookSet) {
    exitHookSet = true;
    // A test process that ends without destroy() (a failed assertion, a timeout) leaves no server behind.
    process.on('exit', () => {
      for (const c of [...live]) c.destroy();
    });
  }
  return server;
}
