import { expect, it } from 'vitest';
import type { ApprovalState } from '../../../src/core/approval.js';
import type { Message } from '../../../src/core/message.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

function msg(over: Partial<Message> = {}): Message {
  return {
    id: newId(),
    threadId: 't1',
    from: 'api',
    to: 'desk',
    payloadType: 'Ticket',
    payload: { text: 'refund A-1' },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: {},
    attempt: 1,
    ...over,
  };
}

const proposal: ApprovalState = {
  conversation: [
    { role: 'user', content: '<message from="api" type="Ticket">{"text":"refund A-1"}</message>' },
    { role: 'assistant', content: 'Looking it up', toolCalls: [{ id: 'call_1', name: 'lookupOrder', arguments: '{"orderId":"A-1"}' }] },
  ],
  proposedCalls: [{ id: 'call_1', name: 'lookupOrder', arguments: { orderId: 'A-1' }, parameters: { type: 'object', properties: { orderId: { type: 'string' } } }, needsApproval: true }],
  outgoing: [{ to: 'outbox', payload: { text: 'working on it — ünïcode' } }],
  toolRounds: 1,
  repairUsed: false,
  llmCallId: 'llm-1',
};

eachBackend('approvals (AWAITING with a proposal) contract', (backend) => {
  it('the proposal and conversation are kept with the AWAITING entry; the first decision moves it back to PENDING with the decision, a second is refused', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    void s.journal.dispatched(m);
    await s.journal.awaiting(m, null, proposal, []);
    const open = await s.journal.openAsks();
    expect(open.map((e) => e.message.id)).toEqual([m.id]);
    expect(open[0]).toMatchObject({ state: 'AWAITING', approval: proposal });
    expect((await s.journal.get(m.id))?.approval).toEqual(proposal);

    const decision = { kind: 'approved' as const, arguments: { call_1: { orderId: 'B-2' } }, note: 'edited', by: 'alice', at: 1_700_000_000_000 };
    expect(await s.journal.decideApproval(m.id, decision)).toBe(true);
    expect(await s.journal.decideApproval(m.id, { ...decision, by: 'bob' })).toBe(false);
    const entry = await s.journal.get(m.id);
    expect(entry).toMatchObject({ state: 'PENDING', closedBy: 'alice', closedNote: 'edited', approval: { ...proposal, decision } });
    expect(await s.journal.openAsks()).toEqual([]);
    expect((await s.journal.keptStats()).counts).toMatchObject({ AWAITING: 0, PENDING: 1 });
  });

  it('an ask (no proposal) cannot be decided as an approval', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    await s.journal.awaiting(m, null);
    expect(await s.journal.decideApproval(m.id, { kind: 'rejected', arguments: {}, note: 'no', by: 'alice', at: 1 })).toBe(false);
    expect((await s.journal.get(m.id))?.state).toBe('AWAITING');
  });
});
