import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { api, servedAt, startCli, until, type Running } from '../cli/processes.js';
import { killAll } from '../cli/processes.js';
import { eachBackend } from '../store/contract/backends.js';

afterEach(killAll);

const CEILING = 2_500;

/** One LLM agent that hands each message to a code handler: every inject is one LLM call, then the thread completes. */
function chatOrganism(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-chat-'));
  writeFileSync(path.join(dir, 'log.ts'), 'export const log = () => {};\n');
  const config = path.join(dir, 'organism.yaml');
  writeFileSync(
    config,
    `organism: {name: chat}
max_tokens_per_thread: ${CEILING}
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        chat:
          - '<send to="log"><Note><text>{{text}}</text></Note></send>'
  pricing:
    mock-: {prompt: 1, completion: 2}
payloads:
  Note: {fields: {text: string}}
listeners:
  - name: chat
    description: Answers
    agent: true
    handler: builtin:llm
    model: mock-1
    prompt: You answer.
    payload: Note
    peers: [log]
  - name: log
    description: Keeps the answer
    handler: ./log.ts#log
    payload: Note
`,
  );
  return config;
}

/**
 * Issue 23, item 1, through a real `organism serve` over HTTP: a thread's budget is its whole
 * life's, across its exchanges and across restarts (graceful and kill -9) of the server. On
 * PostgreSQL in cluster mode as it scales out: `serve --handlers off` and two `organism worker`
 * processes make the LLM calls, and a kill -9 takes a worker down with the server.
 */
eachBackend("a thread's budget over its life, across restarts of a real server", (backend) => {
  it('spend and a raised ceiling persist across completion and restarts; an exhausted thread stays refused until the ceiling is raised', async () => {
    const config = chatOrganism();
    const store = await backend.place().cliArgs();
    const clusterMode = backend.name === 'postgres';
    const env = { ORGANISM_LEASE_SECONDS: '3' }; // a killed worker's delivery comes back within seconds
    const serve = () => startCli(['serve', config, ...store, ...(clusterMode ? ['--handlers', 'off'] : []), '--port', '0', '--no-supervisor', '--log-level', 'warn'], env);
    const worker = (name: string) => startCli(['worker', config, '--store', store[store.indexOf('--store') + 1]!, '--name', name, '--log-level', 'warn'], env);
    let server: Running = serve();
    let call = api(await servedAt(server));
    const workers: Running[] = clusterMode ? [worker('w1'), worker('w2')] : [];
    let started = workers.length;
    const restart = async (signal: 'SIGTERM' | 'SIGKILL') => {
      server.child.kill(signal);
      if (clusterMode && signal === 'SIGKILL') {
        const gone = workers.shift()!;
        gone.child.kill('SIGKILL');
        await gone.exited;
        workers.push(worker(`w${++started}`));
      }
      await server.exited;
      server = serve();
      call = api(await servedAt(server));
    };
    // biome-ignore lint/suspicious/noExplicitAny: response bodies, read as whatever each check expects
    const json = async (p: string, init?: RequestInit) => (await call(p, init)).json() as Promise<Record<string, any>>;
    const budget = () => json('/usage/threads/chat');
    /** One exchange: inject into the thread, wait until it has finished; its status. */
    const exchange = async (text: string): Promise<string> => {
      const res = await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'chat', threadId: 'chat', payload: { Note: { text } } }) });
      expect(res.status).toBe(200);
      const { messageId } = (await res.json()) as { messageId: string };
      const entry = await until(async () => {
        const e = await json(`/journal/${messageId}`);
        return e.deliveryState === 'ACKED' || e.deliveryState === 'FAILED' ? e : null;
      }, `the exchange "${text}"`);
      const thread = await until(async () => {
        const t = await json('/threads/chat');
        return t.status !== 'active' ? t : null;
      }, 'the thread to finish');
      await until(async () => (await budget()).active === false, 'the budget to be finished');
      expect(thread.status).toBe(entry.deliveryState === 'ACKED' ? 'completed' : 'error');
      if (entry.deliveryState === 'FAILED') expect(entry.failureReason).toBe('budget_exhausted');
      return thread.status as string;
    };

    expect(await exchange('one')).toBe('completed');
    const first = await budget();
    expect(first).toMatchObject({ maxTokens: CEILING, active: false });
    expect(first.totalTokens).toBeGreaterThan(0);

    // kill -9 right after the thread completed: its spend is still there, and the next exchange adds to it.
    await restart('SIGKILL');
    expect(await budget()).toMatchObject({ totalTokens: first.totalTokens, maxTokens: CEILING, active: false });
    expect(await exchange('two')).toBe('completed');
    const second = await budget();
    expect(second.totalTokens).toBeGreaterThan(first.totalTokens);

    // A graceful restart too; then exchanges until the ceiling refuses one.
    await restart('SIGTERM');
    expect(await budget()).toMatchObject({ totalTokens: second.totalTokens, active: false });
    let spent = second.totalTokens as number;
    let exchanges = 2;
    for (;;) {
      const status = await exchange(`more ${exchanges}`);
      const now = (await budget()).totalTokens as number;
      expect(now).toBeLessThanOrEqual(CEILING);
      if (status === 'error') {
        expect(now).toBe(spent); // refused before any call: nothing spent
        break;
      }
      expect(now).toBeGreaterThan(spent);
      spent = now;
      exchanges++;
      expect(exchanges).toBeLessThan(20);
    }
    expect((await json('/usage')).usage.activeThreads).toBe(0);

    // Exhausted, and so it stays across a crash: the next exchange is refused again.
    await restart('SIGKILL');
    expect(await budget()).toMatchObject({ totalTokens: spent, maxTokens: CEILING, active: false });
    expect(await exchange('refused')).toBe('error');
    expect((await budget()).totalTokens).toBe(spent);

    // The operator raises the finished thread's ceiling; it persists, and the thread goes on under it.
    const raised = await call('/usage/threads/chat', { method: 'PUT', body: JSON.stringify({ maxTokens: CEILING * 2 }) });
    expect(raised.status).toBe(200);
    expect(await raised.json()).toMatchObject({ maxTokens: CEILING * 2, totalTokens: spent, active: false });
    await restart('SIGKILL');
    expect(await budget()).toMatchObject({ maxTokens: CEILING * 2, totalTokens: spent, active: false });
    expect(await exchange('again')).toBe('completed');
    const last = await budget();
    expect(last.totalTokens).toBeGreaterThan(spent);
    expect(last.totalTokens).toBeLessThanOrEqual(CEILING * 2);

    // The thread's every LLM call, from the persisted usage events: what its budget says.
    const history = await json('/usage/history?threadId=chat&limit=1000');
    expect(history.events.reduce((n: number, e: { totalTokens: number }) => n + e.totalTokens, 0)).toBe(last.totalTokens);
    const listed = await json('/usage/threads?state=finished');
    expect(listed.threads).toEqual([expect.objectContaining({ threadId: 'chat', totalTokens: last.totalTokens, active: false })]);
    expect((await json('/usage/threads')).threads).toEqual([]);
    if (clusterMode) {
      // The LLM calls were the workers' (serve runs no handlers).
      const listed = (await json('/workers')).workers as Array<{ kind: string; handlers: boolean }>;
      expect(listed.filter((w) => w.kind === 'worker' && w.handlers).length).toBeGreaterThanOrEqual(2);
      expect(listed.filter((w) => w.kind === 'serve').every((w) => !w.handlers)).toBe(true);
    }
  }, 300_000);
});
