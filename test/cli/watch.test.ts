import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, organismDir, startServer, stopProcess, until, type ServerProcess } from './processes.js';

afterAll(killAll);

/** writer (a mock LLM agent) -> stamp (code: prefixes the text with its version) -> sink (code). */
const config = (prompt: string, answer: string) => `organism:
  name: watched
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        writer:
          - '<send to="stamp"><Text><text>${answer} {{text}}</text></Text></send>'
listeners:
  - name: writer
    handler: builtin:llm
    model: mock-small
    prompt: ${prompt}
    peers: [stamp]
    payload: Text
  - name: stamp
    handler: ./handlers.ts#stamp
    peers: [sink]
    payload: Text
  - name: sink
    handler: ./handlers.ts#sink
    payload: Text
payloads:
  Text: {fields: {text: string}}
`;

const handlers = (version: string) => `
export function stamp(payload: { text: string }) {
  return { to: 'sink', payload: { text: '${version} ' + payload.text } };
}
export function sink() {}
`;

/** As editors save: a new file renamed over the old one. */
function save(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/** Occurrences of `pattern` in the server's output. */
const count = (server: ServerProcess, pattern: RegExp) => server.output().match(new RegExp(pattern.source, 'g'))?.length ?? 0;

/** Injects `text` to the writer; what reached the sink, and the prompt-bearing LLM call of the thread. */
async function deliver(server: ServerProcess, text: string): Promise<{ sunk: string; call: string }> {
  const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'writer', payload: { Text: { text } } }) });
  expect(res.status).toBe(200);
  const { threadId } = (await res.json()) as { threadId: string };
  const sunk = await until(async () => {
    const page = (await (await server.api(`/threads/${threadId}/messages`)).json()) as { messages: Array<{ to: string; payload: { text?: string } }> };
    return page.messages.find((m) => m.to === 'sink')?.payload.text;
  }, `the message of ${threadId} to reach the sink`);
  const calls = await (await server.api(`/threads/${threadId}/llm-calls`)).text();
  return { sunk, call: calls };
}

describe('organism serve --watch (supervised: the watcher runs in the server process)', () => {
  it('an edited prompt, script or handler is used by the next delivery; a broken edit keeps the running config and is logged once', async () => {
    const dir = organismDir(config('Prompt version one.', 'first'), { 'handlers.ts': handlers('v1') });
    const yaml = path.join(dir, 'organism.yaml');
    const server = await startServer(yaml, ['--watch', '--log-level', 'info'], { supervisor: true });
    expect(server.output()).toMatch(/Watching: .*organism\.yaml and 1 handler file/);

    const before = await deliver(server, 'one');
    expect(before.sunk).toBe('v1 first one');
    expect(before.call).toContain('Prompt version one.');

    // organism.yaml: the prompt and the mock's answer.
    save(yaml, config('Prompt version two.', 'second'));
    await until(() => /watch: organism\.yaml changed; reloaded: writer \(prompt\)/.test(server.output()), 'the reload after the prompt edit');
    const edited = await deliver(server, 'two');
    expect(edited.call).toContain('Prompt version two.');
    expect(edited.call).not.toContain('Prompt version one.');
    expect(edited.sunk).toBe('v1 second two');

    // The handler module, written in place.
    writeFileSync(path.join(dir, 'handlers.ts'), handlers('v2'));
    await until(() => /watch: handlers\.ts changed; reloaded: stamp \(handler code\)/.test(server.output()), 'the reload after the handler edit');
    expect((await deliver(server, 'three')).sunk).toBe('v2 second three');

    // A broken edit: logged with its problem, the running configuration kept.
    save(yaml, config('Prompt version three.', 'third').replace('peers: [sink]', 'peers: [snik]'));
    const broken = /changed but does not load; still running the previous configuration/;
    await until(() => broken.test(server.output()), 'the broken edit to be logged');
    expect(server.output()).toContain('unknown peer `snik`');
    const kept = await deliver(server, 'four');
    expect(kept.sunk).toBe('v2 second four');
    expect(kept.call).toContain('Prompt version two.');

    // Fixed: reloaded; the broken edit was logged once, and only once.
    save(yaml, config('Prompt version three.', 'third'));
    await until(() => count(server, /reloaded: writer \(prompt\)/) === 2, 'the reload after the fix');
    expect(count(server, broken)).toBe(1);
    expect((await deliver(server, 'five')).sunk).toBe('v2 third five');

    expect(await stopProcess(server)).toBe(0);
  });

  it('in a TypeScript project, rewrites organism-env.d.ts at start and when a reload changes the types, without reloading for it', async () => {
    const dir = organismDir(config('Prompt.', 'first'), { 'handlers.ts': handlers('v1'), 'tsconfig.json': '{"include": ["**/*.ts"]}\n' });
    const yaml = path.join(dir, 'organism.yaml');
    const types = path.join(dir, 'organism-env.d.ts');
    const server = await startServer(yaml, ['--watch', '--log-level', 'info'], { supervisor: false });
    await until(() => existsSync(types) && readFileSync(types, 'utf8').includes('export interface Text {\n  text: string;\n}'), 'organism-env.d.ts at start');

    save(yaml, config('Prompt.', 'first').replace('{fields: {text: string}}', '{fields: {text: string, lang: string?}}'));
    await until(() => readFileSync(types, 'utf8').includes('  text: string;\n  lang?: string;\n}'), 'organism-env.d.ts after the reload');
    await until(() => count(server, /organism-env\.d\.ts rewritten/) === 2, 'the rewrite to be logged (at start, then after the reload)');
    expect((await deliver(server, 'one')).sunk).toBe('v1 first one');
    // Its own write was not taken for an edit.
    expect(server.output()).not.toContain('organism-env.d.ts changed');

    expect(await stopProcess(server)).toBe(0);
  });
});
