import { spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { freePort, startProcess, until } from './processes.js';

/**
 * A user's own organism, as README's "Your own organism" builds it: `organism init`, then a
 * handler that imports `send` from 'organism' and a listener it sends to.
 */
export const TOKEN = 'own-project-operator-token';

export const RELAY_HANDLERS = `
import { appendFileSync } from 'node:fs';
import { send, type Handler } from 'organism';

/** Sends the note on to the sink, shouted. */
export const relay: Handler = (payload) => send('sink', { text: String(payload['text']).toUpperCase() });

/** Writes what it receives beside this file, so the test can see it arrived. */
export const sink: Handler = (payload, ctx) => {
  appendFileSync(new URL('./delivered.log', import.meta.url), ctx.from + ': ' + String(payload['text']) + '\\n');
};
`;

export const RELAY_LISTENERS = `
  - name: relay
    description: Passes notes on to the sink
    handler: ./relay.ts#relay
    payload: Note
    peers: [sink]

  - name: sink
    description: Keeps what it is sent
    handler: ./relay.ts#sink
    payload: Note
`;

/** Adds the relay and sink listeners (and their payload type) to the starter organism.yaml. */
export function addRelay(dir: string): void {
  writeFileSync(path.join(dir, 'relay.ts'), RELAY_HANDLERS);
  const file = path.join(dir, 'organism.yaml');
  const text = readFileSync(file, 'utf8').replace('\npayloads:\n', '\npayloads:\n  Note:\n    description: A short note\n    fields:\n      text: string\n');
  writeFileSync(file, text);
  appendFileSync(file, RELAY_LISTENERS);
}

export function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 180_000 });
}

/**
 * Runs `serve` (the given command line) in `dir`, injects a note for the relay and waits until
 * the sink wrote it. Returns the server's output; stops the server on the way out.
 */
export async function serveAndRelay(command: string, args: string[], dir: string, children: ChildProcess[]): Promise<string> {
  const port = await freePort();
  const { child, output, exited } = startProcess(command, [...args, 'serve', 'organism.yaml', '--port', String(port), '--no-supervisor'], { cwd: dir, env: { ORGANISM_API_TOKEN: TOKEN } });
  children.push(child);
  const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN });
  await until(() => child.exitCode === null && client.health(), `the server to answer (output: ${output()})`);
  const { threadId } = await client.inject({ to: 'relay', payload: { Note: { text: 'hello from my own organism' } } });
  const log = path.join(dir, 'delivered.log');
  await until(() => existsSync(log) && readFileSync(log, 'utf8').includes('HELLO FROM MY OWN ORGANISM'), `the sink to receive the note (output: ${output()})`);
  expect(readFileSync(log, 'utf8')).toBe('relay: HELLO FROM MY OWN ORGANISM\n');
  const thread = await until(async () => {
    const t = await client.threads.get(threadId);
    return t.status !== 'active' ? t : null;
  }, 'the thread to end');
  expect(thread.status).toBe('completed');
  expect(thread.messages.map((m) => `${m.from}->${m.to} ${m.deliveryState}`)).toEqual(['api->relay ACKED', 'relay->sink ACKED']);
  await client.organism.stop();
  expect(await exited).toBe(0);
  return output();
}

/** Newest modification time of the .ts files under dir. */
function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
    const p = path.join(dir, e.name);
    return Math.max(max, e.isDirectory() ? newest(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0);
  }, 0);
}

/**
 * dist/ as a project importing `organism/testing` gets it (the package's exports): built when
 * absent or older than src/, as scripts/api-report.mjs does for the API reports.
 */
export function ensureBuilt(root: string): void {
  const entry = path.join(root, 'dist/testing/index.js');
  if (existsSync(entry) && statSync(entry).mtimeMs >= newest(path.join(root, 'src'))) return;
  const build = run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], root);
  expect(build.status, build.stdout + build.stderr).toBe(0);
}

/**
 * What \`npm install\` would give the starter, without the network: node_modules linking organism
 * to this checkout and its devDependencies (typescript, @types/node, vitest) to this checkout's
 * copies, with their bins.
 */
export function linkDevModules(dir: string, root: string): void {
  const modules = path.join(dir, 'node_modules');
  mkdirSync(path.join(modules, '.bin'), { recursive: true });
  mkdirSync(path.join(modules, '@types'), { recursive: true });
  symlinkSync(root, path.join(modules, 'organism'));
  for (const name of ['typescript', 'vitest', '@types/node']) symlinkSync(path.join(root, 'node_modules', name), path.join(modules, name));
  symlinkSync('../vitest/vitest.mjs', path.join(modules, '.bin/vitest'));
  symlinkSync('../typescript/bin/tsc', path.join(modules, '.bin/tsc'));
}

/** The starter's own scripts: \`npm run typecheck\` and \`npm test\` (its organism.test.ts) pass. */
export function starterChecksPass(dir: string): void {
  const typecheck = run('npm', ['run', 'typecheck'], dir);
  expect(typecheck.status, typecheck.stdout + typecheck.stderr).toBe(0);
  const test = run('npm', ['test'], dir, { CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' });
  expect(test.status, test.stdout + test.stderr).toBe(0);
  expect(test.stdout).toMatch(/Tests\s+3 passed/);
}
