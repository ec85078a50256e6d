import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { eachBackend } from '../store/contract/backends.js';
import { killAll, organismDir, startServer, stopProcess, type ServerProcess } from './processes.js';

afterEach(killAll);

/**
 * Pending approvals survive a kill -9 (issue 25): a real `serve` whose agent proposed code-tool
 * calls needing approval is SIGKILLed and started again on the same store; the approvals are
 * listed unchanged, and approving each runs its continuation exactly once (the tool appends
 * `ctx.messageId` to a side-effect file; the outbox records what the continuation sent).
 */
const YAML = `organism: {name: desk}
llm:
  providers:
    - name: mock
      type: mock
      script:
        desk:
          - calls: [{name: refund, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Done: {{result}}'}}]
payloads:
  Ticket: {fields: {text: string}}
  Answer: {fields: {text: string}}
listeners:
  - name: desk
    handler: builtin:llm
    prompt: You refund orders.
    model: mock-1
    payload: Ticket
    peers: [outbox]
    tools: [./tools.ts#refund]
    approval: [refund]
  - name: outbox
    handler: ./tools.ts#collect
    payload: Answer
`;

const TOOLS = `import { appendFileSync } from 'node:fs';
import { defineTool, definePayload, type Handler } from 'organism';
export const refund = defineTool({
  description: 'Refunds an order',
  input: definePayload('RefundOrder', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }, ctx) => {
    appendFileSync(process.env.EFFECTS_FILE!, JSON.stringify({ tool: 'refund', messageId: ctx.messageId, orderId }) + '\\n');
    return 'refunded ' + orderId;
  },
});
export const collect: Handler = (payload: { text: string }, ctx) => {
  appendFileSync(process.env.EFFECTS_FILE!, JSON.stringify({ outbox: payload.text, messageId: ctx.messageId }) + '\\n');
};
`;

const COUNT = 10;

eachBackend('pending approvals across a kill -9', (backend) => {
  it('pending approvals are listed unchanged after a restart; approving each runs its continuation exactly once', async () => {
    const dir = organismDir(YAML, { 'tools.ts': TOOLS });
    const effects = path.join(dir, 'effects.log');
    const config = path.join(dir, 'organism.yaml');
    const args = await backend.place().cliArgs();
    const env = { EFFECTS_FILE: effects };
    let server: ServerProcess = await startServer(config, args, { env });
    const post = (s: ServerProcess, p: string, body: unknown) => s.api(p, { method: 'POST', body: JSON.stringify(body) });
    for (let i = 0; i < COUNT; i++) expect((await post(server, '/inject', { to: 'desk', payload: { text: `A-${i}` } })).status).toBe(200);
    const before = await server.until(async () => {
      const page = (await (await server.api('/inbox?kind=approval&limit=100')).json()) as { total: number; items: Array<{ id: string; threadId: string }> };
      return page.total === COUNT ? page.items : null;
    }, 'the approvals listed');

    await stopProcess(server, 'SIGKILL');
    server = await startServer(config, args, { env });
    const s = server;
    const after = (await (await s.api('/inbox?kind=approval&limit=100')).json()) as { items: unknown[] };
    expect(after.items).toEqual(before);
    expect(existsSync(effects)).toBe(false);
    for (const item of before) expect(((await (await s.api(`/threads/${item.threadId}`)).json()) as { status: string }).status).toBe('waiting');

    for (const item of before) expect((await post(s, `/inbox/${item.id}/approve`, {})).status).toBe(200);
    for (const item of before) expect((await post(s, `/inbox/${item.id}/approve`, {})).status).toBe(409);
    const lines = await s.until(() => {
      const text = existsSync(effects) ? readFileSync(effects, 'utf8').trim() : '';
      const all = text ? text.split('\n').map((l) => JSON.parse(l) as { tool?: string; outbox?: string; messageId: string }) : [];
      return all.filter((l) => l.outbox).length >= COUNT ? all : null;
    }, 'every continuation to run');
    const refunds = lines.filter((l) => l.tool === 'refund');
    expect(refunds).toHaveLength(COUNT);
    expect(new Set(refunds.map((l) => l.messageId))).toEqual(new Set(before.map((i) => i.id)));
    expect(lines.filter((l) => l.outbox)).toHaveLength(COUNT);
    for (const item of before) {
      await s.until(async () => ((await (await s.api(`/threads/${item.threadId}`)).json()) as { status: string }).status === 'completed', 'the thread to complete');
    }
    expect(((await (await s.api('/inbox')).json()) as { total: number }).total).toBe(0);
    await stopProcess(server);
  });
});
