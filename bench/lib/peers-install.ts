import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The peer queues (BullMQ, pg-boss, graphile-worker) live in bench/peers with their own
 * package.json and lockfile, never in the project's dependencies. The peers scenario installs
 * them there on demand with `npm ci --prefix bench/peers`; node_modules there is gitignored.
 */

export const PEERS_DIR = fileURLToPath(new URL('../peers/', import.meta.url));
const MARKER = path.join(PEERS_DIR, 'node_modules', '.organism-bench-lock-hash');

const lockHash = () =>
  createHash('sha256')
    .update(readFileSync(path.join(PEERS_DIR, 'package-lock.json')))
    .digest('hex');

/** Installs the pinned peers unless the lockfile's exact install is already there. */
export function ensurePeersInstalled(log: (line: string) => void): void {
  const hash = lockHash();
  if (existsSync(MARKER) && readFileSync(MARKER, 'utf8') === hash) return;
  log(`  installing the peer queues into bench/peers (npm ci --prefix bench/peers)`);
  // --ignore-scripts: none of the three needs an install script (msgpackr's native part ships prebuilt, and is optional).
  execFileSync('npm', ['ci', '--prefix', PEERS_DIR, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel', 'error'], { stdio: ['ignore', 'inherit', 'inherit'] });
  writeFileSync(MARKER, hash);
}

/** The version of a peer as installed. */
export function peerVersion(name: string): string {
  return (JSON.parse(readFileSync(path.join(PEERS_DIR, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

const peerRequire = createRequire(path.join(PEERS_DIR, 'package.json'));

/** Imports a package from bench/peers/node_modules (the module instance the peers themselves use). */
export async function importPeer<T>(name: string): Promise<T> {
  return (await import(pathToFileURL(peerRequire.resolve(name)).href)) as T;
}
