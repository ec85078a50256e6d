import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { send } from '../../src/core/handler.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { listener, Num, settled, startOrganism, Text } from './harness.js';
import { definePayload } from '../../src/payload/define.js';

const Approval = definePayload('Approval', { ticket: 'integer', approved: 'boolean' });
const types = [Text, Num, Approval];

/** A listener of two types (`payload: [Text, Approval]`) recording what it is handed and as which type. */
function desk(seen: Array<{ type: string; payload: unknown }>) {
  return listener('desk', { payloadTypes: ['Text', 'Approval'], handler: (p, ctx) => void seen.push({ type: ctx.payloadType, payload: p }) });
}

describe('a listener of several payload types (payload: [Text, Approval])', () => {
  it('is delivered a message of each of its types, ctx.payloadType telling which', async () => {
    const seen: Array<{ type: string; payload: unknown }> = [];
    const { organism } = await startOrganism(
      [listener('front', { peers: ['desk'], handler: () => [send('desk', { text: 'hello' }, 'Text'), send('desk', { ticket: 7, approved: true }, 'Approval')] }), desk(seen)],
      {},
      {},
      types,
    );
    const { threadId } = await organism.inject('front', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('completed');
    expect(seen.sort((a, b) => a.type.localeCompare(b.type))).toEqual([
      { type: 'Approval', payload: { ticket: 7, approved: true } },
      { type: 'Text', payload: { text: 'hello' } },
    ]);
    await organism.stop();
  });

  it('refuses a type not in the list, naming the types it accepts', async () => {
    const seen: Array<{ type: string; payload: unknown }> = [];
    const { organism, events } = await startOrganism([listener('front', { peers: ['desk'], handler: () => send('desk', { n: 3 }, 'Num') }), desk(seen)], {}, {}, types);
    const { threadId } = await organism.inject('front', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(seen).toEqual([]);
    expect(thread.status).toBe('error');
    const failure = events.find((e) => e.type === 'journal_failed' && e.reason === 'invalid_result');
    expect(failure?.type === 'journal_failed' && failure.error).toContain(Errors.WRONG_PAYLOAD_TYPE('desk', 'Text or Approval', 'Num').detail);
    expect(events.some((e) => e.type === 'message' && e.message.to === 'api' && e.message.payloadType === SYSTEM_ERROR_TYPE)).toBe(true);
    await organism.stop();
  });

  it('refuses a send that does not name the type (it cannot be guessed), and a payload invalid for the named type', async () => {
    const seen: Array<{ type: string; payload: unknown }> = [];
    const { organism, events } = await startOrganism(
      [
        listener('front', { peers: ['desk'], handler: (p) => (p['text'] === 'untyped' ? send('desk', { text: 'x' }) : send('desk', { ticket: 'seven', approved: true }, 'Approval')) }),
        desk(seen),
      ],
      {},
      {},
      types,
    );
    for (const text of ['untyped', 'invalid']) await settled(organism, (await organism.inject('front', { text })).threadId);
    expect(seen).toEqual([]);
    const errors = events.flatMap((e) => (e.type === 'journal_failed' && e.reason === 'invalid_result' ? [e.error] : []));
    expect(errors[0]).toContain(Errors.PAYLOAD_TYPE_REQUIRED('desk', 'Text or Approval', 'Text').detail);
    expect(errors[1]).toContain('Invalid Approval payload: ticket');
    await organism.stop();
  });

  it('inject: each type by name; the bare-fields form refused with the types it accepts', async () => {
    const seen: Array<{ type: string; payload: unknown }> = [];
    const { organism } = await startOrganism([desk(seen)], {}, {}, types);
    await settled(organism, (await organism.inject('desk', { Approval: { ticket: 1, approved: false } })).threadId);
    await settled(organism, (await organism.inject('desk', { Text: { text: 'hi' } })).threadId);
    expect(seen).toEqual([
      { type: 'Approval', payload: { ticket: 1, approved: false } },
      { type: 'Text', payload: { text: 'hi' } },
    ]);
    await expect(organism.inject('desk', { text: 'bare' })).rejects.toThrow(Errors.PAYLOAD_TYPE_REQUIRED('desk', 'Text or Approval', 'Text').detail);
    await expect(organism.inject('desk', { Num: { n: 1 } })).rejects.toThrow(Errors.WRONG_PAYLOAD_TYPE('desk', 'Text or Approval', 'Num').detail);
    await organism.stop();
  });
});
