import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { addRelay, run, serveAndRelay } from './own-project.js';

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
  it("init, a handler importing send from 'organism', check, serve, inject: the handler's message is delivered", async () => {
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
    expect(pkg.devDependencies).toEqual({ typescript: own.devDependencies.typescript, '@types/node': own.devDependencies['@types/node'] });
    expect(JSON.parse(readFileSync(path.join(dir, 'tsconfig.json'), 'utf8')).compilerOptions).toMatchObject({ module: 'NodeNext', strict: true, noEmit: true });
    expect(existsSync(path.join(dir, 'node_modules'))).toBe(false); // nothing installed

    addRelay(dir);
    const check = run(process.execPath, [...CLI, 'check', 'organism.yaml'], dir);
    expect(check.status, check.stdout + check.stderr).toBe(0);

    await serveAndRelay(process.execPath, CLI, dir, children);
  }, 180_000);

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
    expect(init.stdout).toContain(`and "typescript": "${own.devDependencies.typescript}", "@types/node": "${own.devDependencies['@types/node']}" to its devDependencies for tsc`);
    expect(existsSync(path.join(dir, 'tsconfig.json'))).toBe(true);
  });
});
