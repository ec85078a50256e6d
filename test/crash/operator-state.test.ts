import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { alive, api, jobOrganism, killAll, processTree, servedAt, startCli, until, type Running } from '../cli/processes.js';

afterEach(killAll);

/** The operator's decisions (pauses, ceilings) and the threads' spend across restarts and kill -9 of real processes. */
describe('operator state across restarts and crashes', () => {
  it('a paused agent stays paused across SIGHUP, a crashed worker and kill -9 of the whole service; its held message runs only on resume', async () => {
    const { config } = jobOrganism();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-paused-'));
    const serve = () => startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--log-level', 'warn']);
    let server = serve();
    let call = api(await servedAt(server));
    const organism = async () => (await (await call('/organism')).json()) as { bootId: string; journal: { lastRecovery: { pausedAgents: string[] } } };
    const nextBoot = async (previous: string) => until(async () => ((await organism()).bootId !== previous ? organism() : null), 'the next boot');
    const agentStatus = async () => ((await (await call('/agents/worker')).json()) as { status: string }).status;
    const state = async (id: string) => ((await (await call(`/journal/${id}`)).json()) as { deliveryState: string }).deliveryState;

    expect((await call('/agents/worker/pause', { method: 'POST' })).status).toBe(200);
    const injected = await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n: 1 } } }) });
    const { messageId } = (await injected.json()) as { messageId: string };
    let boot = (await organism()).bootId;

    // SIGHUP: a graceful restart.
    server.child.kill('SIGHUP');
    let info = await nextBoot(boot);
    expect(await agentStatus()).toBe('paused');
    expect(info.journal.lastRecovery.pausedAgents).toEqual(['worker']);
    expect(await state(messageId)).toBe('PENDING');
    boot = info.bootId;

    // The worker crashes (SIGKILL); its supervisor starts a new one.
    const [, worker] = processTree(server.child.pid!);
    process.kill(worker!, 'SIGKILL');
    info = await nextBoot(boot);
    expect(await agentStatus()).toBe('paused');
    expect(info.journal.lastRecovery.pausedAgents).toEqual(['worker']);
    expect(await state(messageId)).toBe('PENDING');

    // kill -9 of supervisor and worker at once, then a new service on the same directory.
    const tree = processTree(server.child.pid!);
    for (const pid of tree) process.kill(pid, 'SIGKILL');
    await until(() => tree.every((pid) => !alive(pid)), 'the killed processes to be gone');
    server = serve();
    call = api(await servedAt(server));
    info = await until(organism, 'the new service');
    expect(await agentStatus()).toBe('paused');
    expect(info.journal.lastRecovery.pausedAgents).toEqual(['worker']);
    expect(await state(messageId)).toBe('PENDING');

    // Resume: the held message runs, and the resume is remembered too.
    expect((await call('/agents/worker/resume', { method: 'POST' })).status).toBe(200);
    await until(async () => (await state(messageId)) === 'ACKED', 'the held message to run');
    boot = info.bootId;
    server.child.kill('SIGHUP');
    info = await nextBoot(boot);
    expect(info.journal.lastRecovery.pausedAgents).toEqual([]);
    expect(await agentStatus()).not.toBe('paused');
  }, 600_000);

  it('after kill -9 a thread\'s budget counts every persisted usage event, and across repeated kills no thread spends past its ceiling', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-spend-'));
    const config = path.join(dir, 'organism.yaml');
    const ceiling = 40_000;
    // One agent talks to itself, one LLM call per hop, until its thread's budget refuses.
    writeFileSync(
      config,
      `organism: {name: spender}
max_tokens_per_thread: ${ceiling}
max_hops: 100000
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      latency_ms: 5
      script:
        talker:
          - '<send to="talker"><Note><text>{{text}} and on</text></Note></send>'
  pricing:
    mock-: {prompt: 1, completion: 2}
payloads:
  Note: {fields: {text: string}}
listeners:
  - name: talker
    handler: builtin:llm
    model: mock-1
    prompt: Keep talking.
    payload: Note
    peers: [talker]
`,
    );
    const dataDir = path.join(dir, 'data');
    const serve = () => startCli(['serve', config, '--data-dir', dataDir, '--port', '0', '--no-supervisor', '--log-level', 'warn']);
    let server: Running = serve();
    let call = api(await servedAt(server));
    const threadIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'talker', payload: { Note: { text: `t${i}` } } }) });
      threadIds.push(((await res.json()) as { threadId: string }).threadId);
    }
    /** Tokens of a thread's persisted usage events (what was committed with the acks). */
    const persisted = async (threadId: string) => {
      let sum = 0;
      for (let offset = 0; ; offset += 1000) {
        const page = (await (await call(`/usage/history?threadId=${threadId}&limit=1000&offset=${offset}`)).json()) as { events: Array<{ totalTokens: number }> };
        for (const e of page.events) sum += e.totalTokens;
        if (page.events.length < 1000) return sum;
      }
    };
    const budget = async (threadId: string) => (await (await call(`/usage/threads/${threadId}`)).json()) as { totalTokens: number; maxTokens: number; active: boolean };

    for (let kill = 0; kill < 3; kill++) {
      // Kill while the threads spend (each is some way into its budget, none finished).
      const target = ((kill + 1) * ceiling) / 5;
      await until(async () => (await budget(threadIds[0]!)).totalTokens >= target, `thread spend to pass ${target}`);
      server.child.kill('SIGKILL');
      await server.exited;
      server = serve();
      call = api(await servedAt(server));
      for (const id of threadIds) {
        const rebuilt = await budget(id);
        // The budget holds at least what the persisted events say was spent (the saved
        // snapshot alone lags by up to a second of calls).
        expect(rebuilt.totalTokens).toBeGreaterThanOrEqual(await persisted(id));
        expect(rebuilt.maxTokens).toBe(ceiling);
      }
    }
    // Let every thread run into its ceiling, then check nothing went past it.
    for (const id of threadIds) {
      await until(async () => {
        const t = (await (await call(`/threads/${id}`)).json()) as { status: string };
        return t.status !== 'active';
      }, `thread ${id} to end`);
      expect(await persisted(id)).toBeLessThanOrEqual(ceiling);
      const final = await budget(id);
      expect(final).toMatchObject({ active: false, maxTokens: ceiling });
      expect(final.totalTokens).toBeLessThanOrEqual(ceiling);
    }
  }, 900_000);
});
