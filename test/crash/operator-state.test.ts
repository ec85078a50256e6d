import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { alive, api, jobOrganism, killAll, processTree, servedAt, startCli, until, type Running } from '../cli/processes.js';
import { eachBackend } from '../store/contract/backends.js';

afterEach(killAll);

/** The operator's decisions (pauses, ceilings) and the threads' spend across restarts and kill -9 of real processes. */
eachBackend('operator state across restarts and crashes', (backend) => {
  it('a paused agent stays paused across SIGHUP, a crashed server process and kill -9 of the whole service; its held message runs only on resume', async () => {
    const { config } = jobOrganism();
    const store = await backend.place().cliArgs();
    const serve = () => startCli(['serve', config, ...store, '--port', '0', '--log-level', 'warn']);
    let server = serve();
    let call = api(await servedAt(server));
    const organism = async () => (await (await call('/organism')).json()) as { bootId: string; journal: { lastRecovery: { pausedAgents: string[] } } };
    const nextBoot = async (previous: string) =>
      until(async () => {
        const o = await organism();
        return o.bootId && o.bootId !== previous && o.journal ? o : null; // a closing server process answers 503
      }, 'the next boot');
    const agentStatus = async () => ((await (await call('/agents/worker')).json()) as { state: string }).state;
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

    // The server process crashes (SIGKILL); its supervisor starts a new one.
    const [, serverProcess] = processTree(server.child.pid!);
    process.kill(serverProcess!, 'SIGKILL');
    info = await nextBoot(boot);
    expect(await agentStatus()).toBe('paused');
    expect(info.journal.lastRecovery.pausedAgents).toEqual(['worker']);
    expect(await state(messageId)).toBe('PENDING');

    // kill -9 of supervisor and server process at once, then a new service on the same directory.
    const tree = processTree(server.child.pid!);
    for (const pid of tree) process.kill(pid, 'SIGKILL');
    await until(() => tree.every((pid) => !alive(pid)), 'the killed processes to be gone');
    server = serve();
    call = api(await servedAt(server));
    info = await nextBoot(info.bootId);
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

  it("after kill -9 a thread's budget counts every persisted usage event, and across repeated kills no thread spends past its ceiling", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-spend-'));
    const config = path.join(dir, 'organism.yaml');
    const ceiling = 300_000;
    // Two agents talk to each other, one LLM call per hop, until their thread's budget refuses.
    // `latencyMs` of the mock provider: 20 ms to spend, 10 minutes to freeze a server's spend.
    const writeConfig = (latencyMs: number) =>
      writeFileSync(
        config,
        `organism: {name: spender}
max_tokens_per_thread: ${ceiling}
max_hops: 100000
# The identical ping-pong is what the loop breaker holds; here the budget must end it.
loop_guard: {enabled: false}
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      latency_ms: ${latencyMs}
      script:
        ping:
          - '<send to="pong"><Note><text>{{text}}</text></Note></send>'
        pong:
          - '<send to="ping"><Note><text>{{text}}</text></Note></send>'
  pricing:
    mock-: {prompt: 1, completion: 2}
payloads:
  Note: {fields: {text: string}}
listeners:
  - name: ping
    handler: builtin:llm
    model: mock-1
    prompt: Keep talking.
    payload: Note
    peers: [pong]
  - name: pong
    handler: builtin:llm
    model: mock-1
    prompt: Keep talking.
    payload: Note
    peers: [ping]
`,
      );
    writeConfig(20);
    const store = await backend.place().cliArgs();
    const serve = () => startCli(['serve', config, ...store, '--port', '0', '--no-supervisor', '--log-level', 'warn']);
    let server: Running = serve();
    let call = api(await servedAt(server));
    const threadIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call('/inject', { method: 'POST', body: JSON.stringify({ to: 'ping', payload: { Note: { text: `t${i}` } } }) });
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

    const restart = async (latencyMs: number) => {
      server.child.kill('SIGKILL');
      await server.exited;
      writeConfig(latencyMs);
      server = serve();
      call = api(await servedAt(server));
    };
    for (let kill = 0; kill < 3; kill++) {
      // kill -9 while the threads spend (each some way into its budget, none finished) ...
      const target = ((kill + 1) * ceiling) / 5;
      await until(async () => (await budget(threadIds[0]!)).totalTokens >= target, `thread spend to pass ${target}`);
      // ... then look at the rebuilt budgets on a server whose LLM calls do not finish (its
      // spend stays put): each holds at least what the persisted events say was spent (the
      // saved snapshot alone lags by up to a second of calls).
      await restart(600_000);
      for (const id of threadIds) {
        const spent = await persisted(id);
        const rebuilt = await until(async () => {
          const b = await budget(id);
          return b.maxTokens ? b : null;
        }, `the budget of ${id}`);
        expect(rebuilt.totalTokens).toBeGreaterThanOrEqual(spent);
        expect(rebuilt.maxTokens).toBe(ceiling);
      }
      await restart(20);
    }
    // Let every thread run into its ceiling, then check nothing went past it.
    for (const id of threadIds) {
      await until(async () => {
        const t = (await (await call(`/threads/${id}`)).json()) as { status: string; error: string | null };
        return t.status !== 'active' ? t : null;
      }, `thread ${id} to end`);
      expect(await persisted(id)).toBeLessThanOrEqual(ceiling);
      const final = await budget(id);
      expect(final.maxTokens).toBe(ceiling);
      expect(final.totalTokens).toBeLessThanOrEqual(ceiling);
    }
  }, 900_000);
});
