import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { addRelay, ensureBuilt, linkDevModules, run, serveAndRelay, starterChecksPass } from './own-project.js';

const ROOT = path.resolve('.');
// tsx by its URL: the child runs in a directory where the bare name would not resolve.
const CLI = ['--import', import.meta.resolve('tsx'), path.join(ROOT, 'src/cli/main.ts')];
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('your own organism, from an empty directory outside the clone', () => {
  it("init, a handler importing send from 'organism', check, serve, inject: the handler's message is delivered; the starter's typecheck and tests pass", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'my-organism-'));
    dirs.push(dir);
    expect(dir.startsWith(ROOT)).toBe(false);

    const init = run(process.execPath, [...CLI, 'init', '.'], dir);
    expect(init.status, init.stderr).toBe(0);
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    // A file: dependency on the running installation, never a registry range.
    expect(pkg.dependencies).toEqual({ organism: `file:${ROOT}` });
    expect(pkg.type).toBe('module');
    // `npm run typecheck` finds tsc (and node's types for handlers using node:*) once installed:
    // the versions this repository is built with.
    const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.typecheck).toBe('tsc --noEmit');
    expect(pkg.scripts.test).toBe('vitest run');
    expect(pkg.devDependencies).toEqual({ typescript: own.devDependencies.typescript, '@types/node': own.devDependencies['@types/node'], vitest: own.devDependencies.vitest });
    expect(readFileSync(path.join(dir, 'organism.test.ts'), 'utf8')).toContain("from 'organism/testing'");
    expect(JSON.parse(readFileSync(path.join(dir, 'tsconfig.json'), 'utf8')).compilerOptions).toMatchObject({ module: 'NodeNext', strict: true, noEmit: true });
    expect(existsSync(path.join(dir, 'node_modules'))).toBe(false); // nothing installed

    addRelay(dir);
    const check = run(process.execPath, [...CLI, 'check', 'organism.yaml'], dir);
    expect(check.status, check.stdout + check.stderr).toBe(0);

    await serveAndRelay(process.execPath, CLI, dir, children);

    // npm install's result, offline: organism (this checkout, as its exports give it) and the dev tools.
    ensureBuilt(ROOT);
    linkDevModules(dir, ROOT);
    starterChecksPass(dir);
  }, 240_000);

  it('init keeps an existing package.json and tsconfig.json and says how to add the dependency', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'my-organism-'));
    dirs.push(dir);
    const mine = '{"name": "mine", "private": true}\n';
    writeFileSync(path.join(dir, 'package.json'), mine);
    const init = run(process.execPath, [...CLI, 'init', dir], os.tmpdir());
    expect(init.status, init.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'package.json'), 'utf8')).toBe(mine);
    expect(init.stdout).toContain(`Kept your package.json: add "organism": "file:${ROOT}"`);
    const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(init.stdout).toContain(
      `"typescript": "${own.devDependencies.typescript}", "@types/node": "${own.devDependencies['@types/node']}", "vitest": "${own.devDependencies.vitest}" to its devDependencies for tsc and the tests, and the scripts "typecheck": "tsc --noEmit" and "test": "vitest run"`,
    );
    expect(existsSync(path.join(dir, 'organism.test.ts'))).toBe(true);
    expect(existsSync(path.join(dir, 'tsconfig.json'))).toBe(true);
  });
});
