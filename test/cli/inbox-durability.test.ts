import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { eachBackend } from '../store/contract/backends.js';
import { killAll, organismDir, startCli, startServer, until, type ServerProcess } from './processes.js';

afterEach(killAll);

/**
 * Issue 25's durability acceptance, as one run: 100 open asks and 100 pending approvals, then
 * kill -9 of every process (the server's whole tree; on PostgreSQL the API-only `serve` and
 * each of two workers). After the restart all 200 are listed unchanged; answering and
 * approving each runs its continuation exactly once (side effects keyed by `ctx.messageId`);
 * 50 concurrent answers to one more ask: exactly one 200.
 */
const YAML = `organism: {name: durable-desk}
llm:
  providers:
    - name: mock
      type: mock
      script:
        clerk:
          - calls: [{name: refund, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Done: {{result}}'}}]
payloads:
  Text: {fields: {text: string}}
  Decision: {fields: {approved: boolean}}
listeners:
  - name: intake
    handler: ./effects.ts#intake
    payload: [Text, Decision]
    peers: [desk]
  - name: desk
    description: People
    payload: Text
    handler: builtin:human
  - name: clerk
    handler: builtin:llm
    prompt: You refund orders.
    model: mock-1
    payload: Text
    peers: [outbox]
    tools: [./effects.ts#refund]
    approval: [refund]
  - name: outbox
    handler: ./effects.ts#outbox
    payload: Text
`;

const EFFECTS = `import { appendFileSync } from 'node:fs';
import { defineTool, definePayload } from 'organism';
const effect = (line: object) => appendFileSync(process.env.EFFECTS_FILE!, JSON.stringify(line) + '\\n');
export function intake(payload: { text?: string; approved?: boolean }, ctx: { messageId: string; payloadType: string }) {
  if (ctx.payloadType === 'Text') return { to: 'desk', payload: { text: 'approve ' + payload.text }, payloadType: 'Text' };
  effect({ kind: 'decision', messageId: ctx.messageId, approved: payload.approved });
  return undefined;
}
export const refund = defineTool({
  description: 'Refunds an order',
  input: definePayload('RefundOrder', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }, ctx) => {
    effect({ kind: 'refund', messageId: ctx.messageId, orderId });
    return 'refunded ' + orderId;
  },
});
export function outbox(payload: { text: string }, ctx: { messageId: string }) {
  effect({ kind: 'outbox', messageId: ctx.messageId, text: payload.text });
}
`;

const EACH = 100;

interface Item {
  id: string;
  kind: 'ask' | 'approval';
  threadId: string;
}

eachBackend('the inbox across a kill -9 of everything', (backend) => {
  it(`${EACH} open asks and ${EACH} pending approvals are listed unchanged after a kill -9 of every process; each answer and approval runs once; 50 concurrent answers: one 200`, async () => {
    const dir = organismDir(YAML, { 'effects.ts': EFFECTS });
    const effects = path.join(dir, 'effects.log');
    const config = path.join(dir, 'organism.yaml');
    const args = await backend.place().cliArgs();
    const env = { EFFECTS_FILE: effects };
    const cluster = backend.name === 'postgres';
    /** The organism's processes: `serve` alone on SQLite; on PostgreSQL an API-only `serve` and two workers. */
    const boot = async (round: number): Promise<ServerProcess> => {
      const server = await startServer(config, cluster ? [...args, '--handlers', 'off'] : args, { env });
      if (cluster) {
        const store = args[args.indexOf('--store') + 1]!;
        for (const name of [`w${round}a`, `w${round}b`]) {
          const w = startCli(['worker', config, '--store', store, '--name', name, '--log-level', 'warn'], env);
          await until(() => w.output().includes(`organism worker ${name} running`), `worker ${name} to start (output: ${w.output()})`, 90_000);
        }
      }
      return server;
    };
    const post = (s: ServerProcess, p: string, body: unknown) => s.api(p, { method: 'POST', body: JSON.stringify(body) });
    const listAll = async (s: ServerProcess): Promise<{ total: number; items: Item[] }> => {
      const items: Item[] = [];
      let total = 0;
      for (let offset = 0; ; offset += 100) {
        const page = (await (await s.api(`/inbox?limit=100&offset=${offset}`)).json()) as { total: number; items: Item[] };
        items.push(...page.items);
        total = page.total;
        if (page.items.length < 100) return { total, items };
      }
    };

    let server = await boot(1);
    for (let i = 0; i < EACH; i++) {
      expect((await post(server, '/inject', { to: 'intake', payload: { Text: { text: `refund ${i}` } } })).status).toBe(200);
      expect((await post(server, '/inject', { to: 'clerk', payload: { text: `A-${i}` } })).status).toBe(200);
    }
    const s1 = server;
    const before = await s1.until(async () => {
      const all = await listAll(s1);
      return all.total === 2 * EACH && all.items.length === 2 * EACH ? all.items : null;
    }, 'the asks and approvals listed');
    expect(before.filter((i) => i.kind === 'ask')).toHaveLength(EACH);
    expect(before.filter((i) => i.kind === 'approval')).toHaveLength(EACH);

    killAll(); // SIGKILL: every process started, and their children
    server = await boot(2);
    const s = server;
    expect((await listAll(s)).items).toEqual(before);
    expect(existsSync(effects)).toBe(false); // nothing ran: no answer, no approved tool
    expect(((await (await s.api('/journal/stats')).json()) as { counts: { AWAITING: number } }).counts.AWAITING).toBe(2 * EACH);

    for (const item of before) {
      const res = item.kind === 'ask' ? await post(s, `/inbox/${item.id}/answer`, { payload: { Decision: { approved: true } } }) : await post(s, `/inbox/${item.id}/approve`, {});
      expect(res.status).toBe(200);
    }
    for (const item of before.slice(0, 10))
      expect((await post(s, `/inbox/${item.id}/${item.kind === 'ask' ? 'answer' : 'approve'}`, item.kind === 'ask' ? { payload: { Decision: { approved: false } } } : {})).status).toBe(409);

    // One more ask, answered 50 times at once.
    expect((await post(s, '/inject', { to: 'intake', payload: { Text: { text: 'contested' } } })).status).toBe(200);
    const contested = await s.until(async () => (await listAll(s)).items[0], 'the contested ask');
    const statuses = await Promise.all(Array.from({ length: 50 }, () => post(s, `/inbox/${contested.id}/answer`, { payload: { Decision: { approved: true } } }).then((r) => r.status)));
    expect(statuses.filter((st) => st === 200)).toHaveLength(1);
    expect(statuses.filter((st) => st === 409)).toHaveLength(49);

    const lines = await s.until(
      () => {
        const text = existsSync(effects) ? readFileSync(effects, 'utf8').trim() : '';
        const all = text ? text.split('\n').map((l) => JSON.parse(l) as { kind: string; messageId: string }) : [];
        const count = (kind: string) => all.filter((l) => l.kind === kind).length;
        return count('decision') >= EACH + 1 && count('outbox') >= EACH ? all : null;
      },
      'every continuation to run',
      240_000,
    );
    const byKind = (kind: string) => lines.filter((l) => l.kind === kind).map((l) => l.messageId);
    // Exactly once: one effect per answer, per approved tool call and per continuation, no repeats.
    for (const kind of ['decision', 'refund', 'outbox']) expect(new Set(byKind(kind)).size, kind).toBe(byKind(kind).length);
    expect(byKind('decision')).toHaveLength(EACH + 1);
    expect(byKind('refund')).toHaveLength(EACH);
    expect(new Set(byKind('refund'))).toEqual(new Set(before.filter((i) => i.kind === 'approval').map((i) => i.id)));
    expect(byKind('outbox')).toHaveLength(EACH);
    for (const item of before) {
      await s.until(async () => ((await (await s.api(`/threads/${item.threadId}`)).json()) as { status: string }).status === 'completed', `thread ${item.threadId} to complete`);
    }
    expect((await listAll(s)).total).toBe(0);
  }, 600_000);
});
