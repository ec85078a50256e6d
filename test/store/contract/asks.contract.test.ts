import { expect, it } from 'vitest';
import type { AskClosing } from '../../../src/core/journal.js';
import type { Message } from '../../../src/core/message.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

function msg(over: Partial<Message> = {}): Message {
  return {
    id: newId(),
    threadId: 't1',
    from: 'intake',
    to: 'desk',
    payloadType: 'Text',
    payload: { text: 'approve?' },
    timestamp: Date.now(),
    parentId: null,
    hops: 1,
    metadata: {},
    attempt: 1,
    ...over,
  };
}

const answer = (ask: Message, by = 'alice'): AskClosing => ({
  state: 'ACKED',
  reason: null,
  error: null,
  by,
  note: 'ok',
  outgoing: [msg({ from: 'desk', to: 'intake', parentId: ask.id, hops: ask.hops + 1, payload: { text: 'yes' } })],
});

eachBackend('asks (AWAITING) contract', (backend) => {
  it('PENDING -> DISPATCHED -> AWAITING -> ACKED: listed while open, closed once with its answer journaled in the same write', async () => {
    const s = await backend.place().open();
    const ask = msg();
    await s.journal.pending([ask]);
    void s.journal.dispatched(ask);
    const expiresAt = Date.now() + 60_000;
    await s.journal.awaiting(ask, expiresAt);
    const open = await s.journal.openAsks();
    expect(open.map((e) => e.message.id)).toEqual([ask.id]);
    expect(open[0]).toMatchObject({ state: 'AWAITING', expiresAt, attempts: 1, message: ask });
    expect((await s.journal.stats()).counts).toMatchObject({ PENDING: 0, DISPATCHED: 0, AWAITING: 1 });
    expect((await s.journal.keptStats()).counts.AWAITING).toBe(1);
    expect((await s.journal.list({ state: 'AWAITING', limit: 10, offset: 0 })).total).toBe(1);

    const closing = answer(ask);
    expect(await s.journal.closeAsk(ask.id, closing)).toBe(true);
    expect(await s.journal.closeAsk(ask.id, answer(ask, 'bob'))).toBe(false);
    const entry = await s.journal.get(ask.id);
    expect(entry).toMatchObject({ state: 'ACKED', closedBy: 'alice', closedNote: 'ok', expiresAt });
    expect(entry?.ackedAt).toBeTypeOf('number');
    expect((await s.journal.get(closing.outgoing[0]!.id))?.state).toBe('PENDING');
    expect(await s.journal.openAsks()).toEqual([]);
    expect((await s.journal.stats()).counts).toMatchObject({ AWAITING: 0, ACKED: 1, PENDING: 1 });
    expect((await s.journal.keptStats()).counts).toMatchObject({ AWAITING: 0, ACKED: 1, PENDING: 1 });
  });

  it('a rejection: AWAITING -> FAILED rejected with the error and note; nothing but closeAsk moves an open ask', async () => {
    const s = await backend.place().open();
    const ask = msg();
    await s.journal.pending([ask]);
    await s.journal.awaiting(ask, null);
    // A stale outcome of the delivery does not close the ask.
    await s.journal.acked(ask, [], []);
    await s.journal.failed(ask, 'handler_error', 'late', [], []);
    expect((await s.journal.get(ask.id))?.state).toBe('AWAITING');
    const notice = msg({ from: 'system', to: 'intake', payloadType: 'SystemError', payload: { error: 'rejected' }, parentId: ask.id });
    expect(await s.journal.closeAsk(ask.id, { state: 'FAILED', reason: 'rejected', error: 'desk rejected it: no receipt', by: 'bob', note: 'no receipt', outgoing: [notice] })).toBe(true);
    expect(await s.journal.get(ask.id)).toMatchObject({ state: 'FAILED', failureReason: 'rejected', error: 'desk rejected it: no receipt', closedBy: 'bob', closedNote: 'no receipt' });
    expect((await s.journal.get(notice.id))?.state).toBe('PENDING');
    expect((await s.journal.keptStats()).counts).toMatchObject({ AWAITING: 0, FAILED: 1 });
  });

  it('recovery leaves open asks as they are (not redelivered), and they are there unchanged after the store is reopened', async () => {
    const place = backend.place();
    const s = await place.open();
    const ask = msg();
    const other = msg({ to: 'worker' });
    await s.journal.pending([ask, other]);
    await s.journal.awaiting(ask, 1_234);
    void s.journal.dispatched(other);
    const before = await s.journal.openAsks();
    await s.close();
    const again = await place.open();
    const { messages } = await again.journal.recover('boot-2', 3);
    expect(messages.map((m) => m.id)).toEqual([other.id]);
    expect(await again.journal.openAsks()).toEqual(before);
    expect((await again.journal.stats()).counts.AWAITING).toBe(1);
  });

  it('twenty closes of one ask at once: exactly one wins', async () => {
    const s = await backend.place().open();
    const ask = msg();
    await s.journal.pending([ask]);
    await s.journal.awaiting(ask, null);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => s.journal.closeAsk(ask.id, answer(ask, `p${i}`))));
    expect(results.filter(Boolean)).toHaveLength(1);
    const answers = await s.journal.list({ threadId: 't1', agent: 'intake', limit: 50, offset: 0 });
    expect(answers.items.filter((e) => e.message.from === 'desk')).toHaveLength(1);
  });
});
