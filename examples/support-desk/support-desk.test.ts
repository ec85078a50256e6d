import { afterEach, describe, expect, it } from 'vitest';
import { createTestOrganism, runHandler, type TestOrganism } from 'organism/testing';
import { sendToCustomer } from './handlers.js';

// The support desk's own tests, written with organism/testing as a project's would be: offline
// (organism.yaml's mock provider and its `when:` branches), in this process, on a memory store.
const config = new URL('./organism.yaml', import.meta.url);

let org: TestOrganism | undefined;
afterEach(async () => {
  await org?.close();
  org = undefined;
});

const route = (messages: readonly { from: string; to: string; state: string }[]) => messages.map((m) => `${m.from} -> ${m.to} ${m.state}`);

describe('the support desk: routing', () => {
  it('sends a billing ticket to billing, which answers the customer directly', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.run('intake', { customer: 'Ana', category: 'billing', text: 'My card was declined' });
    expect(thread.status).toBe('completed');
    expect(route(thread.messages)).toEqual(['api -> intake ACKED', 'intake -> billing ACKED', 'billing -> customer ACKED']);
    expect(thread.logs).toContainEqual(
      expect.objectContaining({ listener: 'customer', msg: 'sent to customer', customer: 'Ana', text: expect.stringContaining('My card was declined'), from: 'billing' }),
    );
    expect(thread.asks).toEqual([]);
  });

  it('sends a ticket about a refund to billing by its text, whatever its category', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.run('intake', { customer: 'Bo', category: 'other', text: 'I want a refund' });
    expect(route(thread.messages)).toEqual(['api -> intake ACKED', 'intake -> billing ACKED', 'billing -> customer ACKED']);
  });

  it('sends a technical ticket to tech, whose draft waits for a person (the thread is `waiting`)', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Cy', text: 'The app crashes on start' });
    const waiting = await thread.settled();
    expect(waiting.status).toBe('waiting');
    expect(route(waiting.messages)).toEqual(['api -> intake ACKED', 'intake -> tech ACKED', 'tech -> review AWAITING']);
    expect(waiting.toolCalls).toEqual([]); // not about an order: no lookup
    expect(await org.inbox({ listener: 'review' })).toEqual(waiting.asks);
    expect(waiting.asks).toEqual([
      expect.objectContaining({
        kind: 'ask',
        listener: 'review',
        from: 'tech',
        payloadType: 'Draft',
        payload: { customer: 'Cy', question: 'The app crashes on start', text: expect.stringContaining('please restart the device') },
        expiresAt: expect.any(Number), // timeout_seconds: 24 h by default
      }),
    ]);
    expect(waiting.logs.some((l) => l.msg === 'sent to customer')).toBe(false);
  });
});

describe('the support desk: a person reviews the draft', () => {
  it('looks the order up (a code tool in the turn), and the approved draft reaches the customer', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Dee', text: 'Where is my order?', orderId: '1042' });
    const { status, asks, toolCalls, llmCalls } = await thread.settled();
    expect(status).toBe('waiting');
    expect(toolCalls.map((t) => [t.kind, t.tool, t.arguments, t.result])).toEqual([['code', 'lookupOrder', { orderId: '1042' }, 'order 1042 is shipped (carrier: DHL).']]);
    expect(llmCalls.map((c) => c.agent)).toEqual(['intake', 'tech', 'tech']); // the tool round, then the draft
    const [ask] = asks;
    expect(ask?.payload['text']).toBe('Hello Dee, order 1042 is shipped (carrier: DHL).');

    // The person approves it as drafted: sends it on to `customer`, a peer of review.
    const sent = await org.answer(ask!.id, { customer: 'Dee', text: String(ask!.payload['text']) }, { to: 'customer', note: 'looks right', by: 'lead' });
    expect(sent).toMatchObject({ from: 'review', to: 'customer', payloadType: 'Reply' });

    const done = await thread.settled();
    expect(done.status).toBe('completed');
    expect(route(done.messages)).toEqual(['api -> intake ACKED', 'intake -> tech ACKED', 'tech -> review ACKED', 'review -> customer ACKED']);
    expect(done.logs).toContainEqual(
      expect.objectContaining({ listener: 'customer', msg: 'sent to customer', customer: 'Dee', text: 'Hello Dee, order 1042 is shipped (carrier: DHL).', from: 'review' }),
    );
    expect(await org.inbox()).toEqual([]);
  });

  it('sends the answer as the person edited it', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Eve', text: 'Screen flickers' });
    const [ask] = (await thread.settled()).asks;
    await org.answer(ask!.id, { customer: 'Eve', text: 'Hello Eve, a fix ships on Monday.' }, { to: 'customer' });
    const done = await thread.settled();
    expect(done.logs).toContainEqual(expect.objectContaining({ msg: 'sent to customer', text: 'Hello Eve, a fix ships on Monday.' }));
  });

  it('an answer to tech (the asker, a Ticket) has the draft written again; the new draft waits in the inbox', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Ivo', text: 'Bluetooth fails' });
    const [first] = (await thread.settled()).asks;
    await org.answer(first!.id, { customer: 'Ivo', text: 'Bluetooth fails: ask for the firmware version' });
    const again = await thread.settled();
    expect(again.status).toBe('waiting');
    expect(route(again.messages)).toEqual(['api -> intake ACKED', 'intake -> tech ACKED', 'tech -> review ACKED', 'review -> tech ACKED', 'tech -> review AWAITING']);
    expect(again.asks).toHaveLength(1);
    expect(again.asks[0]?.id).not.toBe(first!.id);
    expect(again.asks[0]?.payload['question']).toBe('Bluetooth fails: ask for the firmware version');
  });

  it('a rejected draft never reaches the customer: the ask fails with the note, the thread ends in error', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Fay', text: 'Wifi drops' });
    const [ask] = (await thread.settled()).asks;
    const closed = await org.reject(ask!.id, 'too vague, call the customer instead', { by: 'lead' });
    expect(closed).toMatchObject({ outcome: 'rejected', by: 'lead', note: 'too vague, call the customer instead' });

    const done = await thread.settled();
    expect(done.status).toBe('error');
    const review = done.messages.find((m) => m.to === 'review');
    expect(review?.state).toBe('FAILED');
    expect(review?.error).toContain('too vague, call the customer instead');
    expect(done.messages.some((m) => m.to === 'customer')).toBe(false);
    expect(done.logs.some((l) => l.msg === 'sent to customer')).toBe(false);
  });

  it('a draft nobody reviews in time expires (timeout_seconds, on_timeout: fail)', async () => {
    org = await createTestOrganism({ config, env: { REVIEW_TIMEOUT_SECONDS: '0.2' } });
    const thread = await org.inject('intake', { customer: 'Gus', text: 'Printer jams' });
    const done = await thread.finished(); // waits through `waiting` until the ask expires
    expect(done.status).toBe('error');
    const review = done.messages.find((m) => m.to === 'review');
    expect(review?.state).toBe('FAILED');
    expect(review?.error).toMatch(/review/);
    expect(done.messages.some((m) => m.to === 'customer')).toBe(false);
  });
});

describe('the support desk: a person approves a tool call first', () => {
  it('a replacement waits for approval before it ships (the thread is `waiting`, nothing ran); approved with an edited order id, it ships once and tech drafts from its answer', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Kai', text: 'My phone arrived broken', orderId: '1042' });
    const waiting = await thread.settled();
    expect(waiting.status).toBe('waiting');
    expect(waiting.toolCalls).toEqual([]); // proposed, not run
    expect(waiting.logs.some((l) => l.msg === 'replacement shipped')).toBe(false);
    const [approval] = waiting.asks;
    expect(approval).toMatchObject({ kind: 'approval', listener: 'tech', proposedCalls: [{ name: 'replaceDevice', arguments: { customer: 'Kai', orderId: '1042' } }] });
    expect(await org.inbox({ kind: 'ask' })).toEqual([]);

    // The person corrects the order id before it ships.
    const call = approval!.proposedCalls![0] as { id: string };
    const closed = await org.approve(approval!.id, { calls: [{ id: call.id, arguments: { customer: 'Kai', orderId: '1043' } }], note: 'the phone was order 1043', by: 'lead' });
    expect(closed).toMatchObject({ kind: 'approval', outcome: 'edited', by: 'lead' });

    const drafted = await thread.settled();
    expect(drafted.status).toBe('waiting'); // now the draft waits for review
    expect(drafted.logs.filter((l) => l.msg === 'replacement shipped')).toEqual([expect.objectContaining({ customer: 'Kai', orderId: '1043' })]);
    expect(drafted.toolCalls.map((t) => [t.tool, t.arguments])).toEqual([['replaceDevice', { customer: 'Kai', orderId: '1043' }]]);
    const [draft] = drafted.asks;
    expect(draft).toMatchObject({ kind: 'ask', listener: 'review', payload: { text: 'Hello Kai, a replacement for order 1043 ships to Kai tomorrow.' } });
  });

  it('a refused replacement never ships: tech hears the refusal and answers again', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.inject('intake', { customer: 'Lu', text: 'Please replace my charger', orderId: '1042' });
    const [approval] = (await thread.settled()).asks;
    expect(approval?.kind).toBe('approval');
    expect(await org.reject(approval!.id, 'warranty expired', { by: 'lead' })).toMatchObject({ kind: 'approval', outcome: 'rejected', note: 'warranty expired' });
    const after = await thread.settled();
    expect(after.logs.some((l) => l.msg === 'replacement shipped')).toBe(false);
    expect(after.toolCalls).toEqual([]);
    // The model was told the person refused (a tool result with the note) and answered again.
    const told = after.llmCalls.at(-1);
    expect(JSON.stringify(told)).toContain('warranty expired');
  });
});

describe('the support desk: one handler', () => {
  it('sendToCustomer logs the answer for the customer', async () => {
    const run = await runHandler(sendToCustomer, { customer: 'Hal', text: 'Done.' }, { self: 'customer', from: 'review' });
    expect(run.sent).toEqual([]);
    expect(run.ctx.logs).toContainEqual(expect.objectContaining({ msg: 'sent to customer', customer: 'Hal', text: 'Done.', from: 'review' }));
  });
});
