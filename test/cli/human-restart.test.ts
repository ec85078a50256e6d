import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { eachBackend } from '../store/contract/backends.js';
import { killAll, organismDir, startServer, stopProcess, type ServerProcess } from './processes.js';

afterEach(killAll);

/**
 * Asks to people survive a kill -9 (issue 25): a real `serve` with open asks is SIGKILLed and
 * started again on the same store; the asks are listed unchanged, answering each runs its
 * continuation exactly once (a side-effect file of `ctx.messageId`), and an ask that came due
 * while the server was down expires as soon as it is back.
 */
const YAML = `organism: {name: desk}
payloads:
  Text: {fields: {text: string}}
  Decision: {fields: {approved: boolean}}
listeners:
  - name: intake
    handler: ./handlers.ts#intake
    payload: [Text, Decision]
    peers: [desk, quick]
  - name: desk
    description: People
    payload: Text
    handler: builtin:human
  - name: quick
    description: People who answer fast, or not at all
    payload: Text
    handler: builtin:human
    timeout_seconds: 2
    on_timeout: {reply: {Decision: {approved: false}}}
`;

/** intake: asks the desk (or `quick`, for a text starting with "quick"); records each Decision it receives. */
const HANDLERS = `import { appendFileSync } from 'node:fs';
export function intake(payload: { text?: string; approved?: boolean }, ctx: { from: string; messageId: string; payloadType: string }) {
  if (ctx.payloadType === 'Text') return { to: String(payload.text).startsWith('quick') ? 'quick' : 'desk', payload: { text: 'approve ' + payload.text }, payloadType: 'Text' };
  appendFileSync(process.env.EFFECTS_FILE!, JSON.stringify({ messageId: ctx.messageId, from: ctx.from, approved: payload.approved }) + '\\n');
  return undefined;
}
`;

const ASKS = 10;

eachBackend('asks to people across a kill -9', (backend) => {
  it('open asks are listed unchanged after a restart; each answer runs once; an overdue ask expires promptly', async () => {
    const dir = organismDir(YAML, { 'handlers.ts': HANDLERS });
    const effects = path.join(dir, 'effects.log');
    const config = path.join(dir, 'organism.yaml');
    const args = await backend.place().cliArgs();
    const env = { EFFECTS_FILE: effects };
    let server: ServerProcess = await startServer(config, args, { env });
    const post = (s: ServerProcess, p: string, body: unknown) => s.api(p, { method: 'POST', body: JSON.stringify(body) });
    for (let i = 0; i < ASKS; i++) expect((await post(server, '/inject', { to: 'intake', payload: { Text: { text: `refund ${i}` } } })).status).toBe(200);
    const before = await server.until(async () => {
      const page = (await (await server.api('/inbox?listener=desk&limit=100')).json()) as { total: number; items: Array<{ id: string; threadId: string }> };
      return page.total === ASKS ? page.items : null;
    }, 'the asks listed');
    expect((await post(server, '/inject', { to: 'intake', payload: { Text: { text: 'quick one' } } })).status).toBe(200);
    const quick = await server.until(
      async () => ((await (await server.api('/inbox?listener=quick')).json()) as { items: Array<{ id: string; expiresAt: string }> }).items[0],
      'the quick ask',
    );

    await stopProcess(server, 'SIGKILL');
    // Down past the quick ask's expiry.
    const due = Date.parse(quick.expiresAt);
    while (Date.now() < due + 200) await new Promise((r) => setTimeout(r, 100));

    server = await startServer(config, args, { env });
    const s = server;
    const after = (await (await s.api('/inbox?listener=desk&limit=100')).json()) as { items: unknown[] };
    expect(after.items).toEqual(before);
    for (const item of before) expect(((await (await s.api(`/threads/${item.threadId}`)).json()) as { status: string }).status).toBe('waiting');

    // The overdue ask was answered with the default reply promptly after the start.
    const startedAt = Date.parse(((await (await s.api('/organism')).json()) as { startedAt: string }).startedAt);
    const expired = await s.until(async () => {
      const entry = (await (await s.api(`/journal/${quick.id}`)).json()) as { deliveryState: string; ackedAt: string | null; closedBy?: string };
      return entry.deliveryState === 'ACKED' ? entry : null;
    }, 'the overdue ask to expire');
    expect(expired.closedBy).toBe('timeout');
    expect(Date.parse(expired.ackedAt!) - Math.max(startedAt, due)).toBeLessThan(1_000);

    for (const item of before) expect((await post(s, `/inbox/${item.id}/answer`, { payload: { Decision: { approved: true } } })).status).toBe(200);
    const lines = await s.until(() => {
      const text = existsSync(effects) ? readFileSync(effects, 'utf8').trim() : '';
      const all = text ? text.split('\n').map((l) => JSON.parse(l) as { messageId: string; from: string; approved: boolean }) : [];
      return all.filter((l) => l.from === 'desk').length >= ASKS ? all : null;
    }, 'every continuation to run');
    const fromDesk = lines.filter((l) => l.from === 'desk');
    expect(fromDesk).toHaveLength(ASKS);
    expect(new Set(fromDesk.map((l) => l.messageId)).size).toBe(ASKS);
    expect(lines.filter((l) => l.from === 'quick')).toEqual([expect.objectContaining({ approved: false })]);
    for (const item of before) {
      await s.until(async () => ((await (await s.api(`/threads/${item.threadId}`)).json()) as { status: string }).status === 'completed', 'the thread to complete');
    }
    expect(((await (await s.api('/inbox')).json()) as { total: number }).total).toBe(0);
    await stopProcess(server);
  });
});
