import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { eachBackend } from '../store/contract/backends.js';
import { killAll, organismDir, startServer, type ServerProcess } from './processes.js';

afterEach(killAll);

/**
 * A kill, then reads (issue 23, item 10): on a real `serve` of each store (PostgreSQL: cluster
 * mode, handlers in the serve, as `organism init` + `--store` runs it), while other threads'
 * deliveries keep claims and outcomes in flight, every thread killed reads `killed` at once
 * and still does once all is quiet.
 */
const YAML = `organism: {name: kills}
max_concurrent_handlers: 200
max_concurrent_per_agent: 100
payloads:
  Text: {fields: {text: string}}
listeners:
  - name: waiter
    handler: ./handlers.ts#wait
    payload: Text
    timeout_seconds: 300
  - name: busy
    handler: ./handlers.ts#busy
    payload: Text
`;

/** waiter: runs until its thread is killed; busy: a short job (the traffic around the kills). */
const HANDLERS = `export const wait = (_p: unknown, ctx: { signal: AbortSignal }) => new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
export const busy = async () => { await new Promise((r) => setTimeout(r, 5)); };
`;

eachBackend('a killed thread reads killed', (backend) => {
  it('inject then kill at once, 40 times amid other traffic: every read after the kill answers says killed', async () => {
    const dir = organismDir(YAML, { 'handlers.ts': HANDLERS });
    const server: ServerProcess = await startServer(path.join(dir, 'organism.yaml'), await backend.place().cliArgs(), { built: true });
    const post = (p: string, body?: unknown) => server.api(p, { method: 'POST', ...(body ? { body: JSON.stringify(body) } : {}) });
    let traffic = true;
    const background = (async () => {
      for (let n = 0; traffic; n++) await post('/inject', { to: 'busy', payload: { text: `b${n}` } });
    })();
    const killed: string[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const injected = await post('/inject', { to: 'waiter', payload: { text: `w${i}` } });
        expect(injected.status).toBe(200);
        const { threadId } = (await injected.json()) as { threadId: string };
        const kill = await post(`/threads/${threadId}/kill`);
        expect(kill.status, await kill.clone().text()).toBe(200);
        killed.push(threadId);
        const read = (await (await server.api(`/threads/${threadId}`)).json()) as { status: string; messageCount: number };
        expect([i, read.status]).toEqual([i, 'killed']);
      }
    } finally {
      traffic = false;
      await background;
    }
    // Whatever was in flight has settled by now: nothing wrote the threads back.
    await server.until(
      async () => {
        const agent = (await (await server.api('/agents/waiter')).json()) as { state: string; queueDepth: number };
        return agent.state === 'idle' && agent.queueDepth === 0;
      },
      'the waiter to have nothing in flight',
      60_000,
    );
    for (const id of killed) expect([id, ((await (await server.api(`/threads/${id}`)).json()) as { status: string }).status]).toEqual([id, 'killed']);
  }, 240_000);
});
