import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { createTestOrganism, type TestOrganism } from '../../src/testing/index.js';

// A writer (code) asks people (`review`, builtin:human) to approve a draft; their verdict comes
// back to the writer, or goes on to the outbox (a peer of review).
const HANDLERS = `
import type { Handler } from 'organism';
import { send } from 'organism';

export const writer: Handler = (payload, ctx) => {
  if (ctx.payloadType === 'Verdict') {
    ctx.log.info('verdict', { ok: payload['ok'] });
    return;
  }
  return send('review', { text: String(payload['text']) }, 'Draft');
};

export const outbox: Handler = (payload, ctx) => {
  ctx.log.info('sent', { text: String(payload['text']) });
};
`;

const YAML = (review = '') => `
organism: {name: inbox-kit}
payloads:
  Request: {fields: {text: string}}
  Draft: {fields: {text: string}}
  Verdict: {fields: {ok: boolean}}
listeners:
  - {name: writer, handler: ./h.ts#writer, payload: [Request, Verdict], peers: [review]}
  - name: review
    handler: builtin:human
    payload: Draft
    peers: [outbox]
${review}
  - {name: outbox, handler: ./h.ts#outbox, payload: Draft}
`;

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function organism(review = '', timeoutMs?: number): Promise<TestOrganism> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-inbox-kit-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'h.ts'), HANDLERS);
  const org = await createTestOrganism({ config: { yaml: YAML(review), dir }, ...(timeoutMs ? { timeoutMs } : {}) });
  cleanups.push(() => org.close());
  return org;
}

const route = (messages: readonly { from: string; to: string; state: string }[]) => messages.map((m) => `${m.from}->${m.to} ${m.state}`);

describe('people in the loop in the test kit', () => {
  it('settled() resolves `waiting` with the open ask; org.answer replies to the asker and the thread goes on to completion', async () => {
    const org = await organism();
    const thread = await org.inject('writer', { Request: { text: 'hello' } });
    const waiting = await thread.settled();
    expect(waiting.status).toBe('waiting');
    expect(waiting.asks).toHaveLength(1);
    const [ask] = waiting.asks;
    expect(ask).toMatchObject({ kind: 'ask', threadId: thread.id, listener: 'review', from: 'writer', payloadType: 'Draft', payload: { text: 'hello' }, expiresAt: null });
    expect(ask?.answerSchema).toMatchObject({ oneOf: expect.any(Array) }); // writer accepts Request and Verdict
    expect(await thread.asks()).toEqual(waiting.asks);
    expect(await org.inbox({ listener: 'review' })).toEqual(waiting.asks);
    expect(await org.inbox({ listener: 'writer' })).toEqual([]);
    // Asked again before anyone answers: still waiting, at once.
    expect((await thread.settled()).status).toBe('waiting');

    const sent = await org.answer(ask!.id, { Verdict: { ok: true } }, { note: 'fine', by: 'alice' });
    expect(sent).toMatchObject({ threadId: thread.id, from: 'review', to: 'writer', payloadType: 'Verdict', payload: { ok: true }, parentId: ask!.id });

    const done = await thread.settled();
    expect(done.status).toBe('completed');
    expect(done.asks).toEqual([]);
    expect(route(done.messages)).toEqual(['api->writer ACKED', 'writer->review ACKED', 'review->writer ACKED']);
    expect(done.logs).toContainEqual(expect.objectContaining({ listener: 'writer', msg: 'verdict', ok: true }));
    expect(await org.inbox()).toEqual([]);
  });

  it('answers to a peer of the human listener (`to`)', async () => {
    const org = await organism();
    const thread = await org.inject('writer', { Request: { text: 'ship it' } });
    const [ask] = (await thread.settled()).asks;
    await org.answer(ask!.id, { text: 'shipped: ship it' }, { to: 'outbox' });
    const done = await thread.settled();
    expect(done.status).toBe('completed');
    expect(route(done.messages)).toEqual(['api->writer ACKED', 'writer->review ACKED', 'review->outbox ACKED']);
    expect(done.logs).toContainEqual(expect.objectContaining({ listener: 'outbox', msg: 'sent', text: 'shipped: ship it' }));
  });

  it('org.reject fails the ask with the note; the asker gets the SystemError and the thread ends in error', async () => {
    const org = await organism();
    const thread = await org.inject('writer', { Request: { text: 'rude draft' } });
    const [ask] = (await thread.settled()).asks;
    const closed = await org.reject(ask!.id, 'too rude', { by: 'bob' });
    expect(closed).toMatchObject({ id: ask!.id, outcome: 'rejected', by: 'bob', note: 'too rude' });
    const done = await thread.settled();
    expect(done.status).toBe('error');
    const asked = done.messages.find((m) => m.id === ask!.id);
    expect(asked?.state).toBe('FAILED');
    expect(asked?.error).toContain('too rude');
    expect(done.messages.some((m) => m.payloadType === 'SystemError' && m.to === 'writer')).toBe(true);
  });

  it('throws the API errors: an answer that does not validate (the ask stays open), and a second answer', async () => {
    const org = await organism();
    const thread = await org.inject('writer', { Request: { text: 'x' } });
    const [ask] = (await thread.settled()).asks;
    const invalid = await org.answer(ask!.id, { Verdict: { ok: 'yes' } }).catch((e: unknown) => e);
    expect(Errors.INVALID_PAYLOAD.is(invalid)).toBe(true);
    expect(await thread.asks()).toHaveLength(1);
    expect((await thread.settled()).status).toBe('waiting');
    await org.answer(ask!.id, { Verdict: { ok: false } });
    const again = await org.answer(ask!.id, { Verdict: { ok: true } }).catch((e: unknown) => e);
    expect(Errors.INBOX_ITEM_CLOSED.is(again)).toBe(true);
    expect((await thread.settled()).status).toBe('completed');
  });

  it('finished() waits through `waiting`: an ask that expires answers with on_timeout', async () => {
    const org = await organism('    timeout_seconds: 0.2\n    on_timeout: {reply: {Verdict: {ok: false}}}');
    const thread = await org.inject('writer', { Request: { text: 'nobody reads this' } });
    const done = await thread.finished();
    expect(done.status).toBe('completed');
    expect(route(done.messages)).toEqual(['api->writer ACKED', 'writer->review ACKED', 'review->writer ACKED']);
    expect(done.logs).toContainEqual(expect.objectContaining({ listener: 'writer', msg: 'verdict', ok: false }));
  });

  it('finished() rejects after the timeout naming the ask still open', async () => {
    const org = await organism('', 300);
    const thread = await org.inject('writer', { Request: { text: 'x' } });
    const err = await thread.finished().catch((e: unknown) => e);
    expect(Errors.TEST_THREAD_NOT_SETTLED.is(err)).toBe(true);
    expect((err as Error).message).toContain('status waiting; open deliveries: writer -> review (AWAITING)');
  });

  it('a killed waiting thread settles killed; its ask leaves the inbox', async () => {
    const org = await organism();
    const thread = await org.inject('writer', { Request: { text: 'x' } });
    expect((await thread.settled()).status).toBe('waiting');
    await org.kill(thread.id);
    expect((await thread.settled()).status).toBe('killed');
    expect(await org.inbox()).toEqual([]);
  });
});
