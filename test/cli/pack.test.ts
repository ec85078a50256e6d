import type { ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addRelay, run, serveAndRelay, starterChecksPass } from './own-project.js';

const ROOT = path.resolve('.');
const children: ChildProcess[] = [];
const work = mkdtempSync(path.join(os.tmpdir(), 'organism-pack-'));
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

interface LockEntry {
  version?: string;
  dev?: boolean;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** The starter's devDependencies (organism init writes them: this repository's versions). */
const DEV_TOOLS = ['typescript', '@types/node', 'vitest'];

/** Where `name` resolves from the lockfile entry `from`: its own node_modules, then each parent's. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | null {
  let base = from;
  for (;;) {
    const key = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[key]) return key;
    if (!base) return null;
    const at = base.lastIndexOf('/node_modules/');
    base = at < 0 ? '' : base.slice(0, at);
  }
}

/** The lockfile entries `roots` need: themselves and every dependency (optional ones and required peers too), transitively. */
function closure(packages: Record<string, LockEntry>, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...roots];
  while (todo.length > 0) {
    const key = todo.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    const entry = packages[key]!;
    const peers = Object.keys(entry.peerDependencies ?? {}).filter((n) => !entry.peerDependenciesMeta?.[n]?.optional);
    for (const name of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {}), ...peers]) {
      const found = resolveIn(packages, key, name);
      if (found) todo.push(found);
    }
  }
  return seen;
}

/**
 * A lockfile for a project that depends on the tarball and has the starter's devDependencies:
 * the tarball's own entry plus this repository's production entries and the entries of the dev
 * tools (same versions, resolved URLs and integrity), so `npm ci` installs exactly what the
 * repository was tested with and finds every tarball in the npm cache (`--prefer-offline`: the
 * registry is asked only for what the cache lacks).
 */
function lockfileFor(tarball: string, name: string, devDependencies: Record<string, string>): object {
  const repoLock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const spec = `file:${path.basename(tarball)}`;
  const packages: Record<string, unknown> = {
    '': { name, dependencies: { organism: spec }, devDependencies },
    'node_modules/organism': { version: pkg.version, resolved: spec, integrity, license: pkg.license, dependencies: pkg.dependencies, bin: pkg.bin, engines: pkg.engines },
  };
  for (const [key, entry] of Object.entries(repoLock.packages)) if (key !== '' && !entry.dev && !entry.link) packages[key] = entry;
  for (const key of closure(
    repoLock.packages,
    DEV_TOOLS.map((n) => `node_modules/${n}`),
  ))
    packages[key] ??= repoLock.packages[key];
  return { name, lockfileVersion: 3, requires: true, packages };
}

describe('npm pack of this repository', () => {
  it("installs into a fresh directory and runs organism init, check and serve there; the starter's typecheck and tests pass", async () => {
    // 1. The tarball, as `npm publish` would make it (prepare builds dist/ first).
    const packed = run('npm', ['pack', '--pack-destination', work], ROOT);
    expect(packed.status, packed.stderr).toBe(0);
    const tarball = path.join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!);
    const listing = run('tar', ['tzf', tarball], work).stdout.split('\n');
    for (const file of [
      'package/bin/organism.js',
      'package/dist/index.js',
      'package/dist/index.d.ts',
      'package/dist/client/index.js',
      'package/dist/testing/index.js',
      'package/dist/testing/index.d.ts',
      'package/dist/cli/main.js',
      'package/README.md',
    ]) {
      expect(listing).toContain(file);
    }
    expect(listing.filter((f) => /^package\/(src|test|bench|node_modules)\//.test(f))).toEqual([]);

    // 2. A fresh project outside the clone that depends on the tarball, with the dev tools and
    // scripts init writes into a starter's package.json (it keeps this one).
    const app = path.join(work, 'app');
    mkdirSync(app);
    copyFileSync(tarball, path.join(app, path.basename(tarball)));
    const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const devDependencies = Object.fromEntries(DEV_TOOLS.map((n) => [n, own.devDependencies[n]!]));
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({
        name: 'app',
        private: true,
        type: 'module',
        scripts: { typecheck: 'tsc --noEmit', test: 'vitest run' },
        dependencies: { organism: `file:${path.basename(tarball)}` },
        devDependencies,
      }),
    );
    writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify(lockfileFor(path.join(app, path.basename(tarball)), 'app', devDependencies)));
    // Install scripts are skipped: better-sqlite3's would compile SQLite (about 7 minutes on
    // this machine without its prebuilt download). Its native addon is taken from this
    // checkout instead, built by the same script for the same version and Node.
    const install = run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], app);
    expect(install.status, install.stderr).toBe(0);
    const sqlite = 'node_modules/better-sqlite3';
    const version = (dir: string) => JSON.parse(readFileSync(path.join(dir, sqlite, 'package.json'), 'utf8')).version;
    expect(version(app)).toBe(version(ROOT));
    mkdirSync(path.join(app, sqlite, 'build/Release'), { recursive: true });
    copyFileSync(path.join(ROOT, sqlite, 'build/Release/better_sqlite3.node'), path.join(app, sqlite, 'build/Release/better_sqlite3.node'));
    expect(existsSync(path.join(app, 'node_modules/organism/src'))).toBe(false);

    // 3. The installed binary: init (keeps the project's package.json), a handler importing
    // `send` from 'organism', check, serve, inject: the message is delivered.
    const organism = path.join(app, 'node_modules/.bin/organism');
    const init = run(organism, ['init', '.'], app);
    expect(init.status, init.stdout + init.stderr).toBe(0);
    addRelay(app);
    const check = run(organism, ['check', 'organism.yaml'], app);
    expect(check.status, check.stdout + check.stderr).toBe(0);
    await serveAndRelay(organism, [], app, children);

    // 4. The starter's own checks, on the installed package: its organism.test.ts imports
    // organism/testing from the tarball's dist/.
    starterChecksPass(app);
  }, 600_000);
});
