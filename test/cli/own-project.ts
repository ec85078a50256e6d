import { spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
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
