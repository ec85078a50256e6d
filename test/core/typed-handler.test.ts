import { describe, expect, expectTypeOf, it } from 'vitest';
import { reply, send, type HandlerContext } from '../../src/core/handler.js';
import { defineHandler, handlerListener } from '../../src/core/typed-handler.js';

function context(over: Partial<HandlerContext> = {}): HandlerContext {
  return {
    threadId: 't1',
    messageId: 'm1',
    from: 'intake',
    self: 'billing',
    payloadType: 'Ticket',
    attempt: 1,
    metadata: {},
    signal: new AbortController().signal,
    llm: {} as HandlerContext['llm'],
    log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    peers: ['ledger'],
    history: async () => [],
    ...over,
  };
}

/** One function per payload type (at module level: lint takes capitalised functions in a function for React components). */
const desk = defineHandler('desk', {
  Ticket: (p, ctx) => ctx.send('tech', { id: p['id'] }),
  Approval: () => undefined,
});

describe('defineHandler', () => {
  it('returns a plain handler whose results are what send() and reply() make; ctx gains payload, send and reply and keeps the rest', async () => {
    let seen: { self?: string; payload?: unknown; history?: unknown } = {};
    const h = defineHandler('billing', async (payload, ctx) => {
      seen = { self: ctx.self, payload: ctx.payload, history: await ctx.history() };
      return [ctx.send('ledger', { amount: payload['amount'] }), ctx.send('ledger', { amount: 2 }, 'Entry'), ctx.reply({ ok: true }), ctx.reply({ ok: false }, 'Done')];
    });
    const ctx = context();
    const out = await h({ amount: 1 }, ctx);
    expect(out).toEqual([send('ledger', { amount: 1 }), send('ledger', { amount: 2 }, 'Entry'), reply({ ok: true }), reply({ ok: false }, 'Done')]);
    expect(out).toEqual([
      { to: 'ledger', payload: { amount: 1 } },
      { to: 'ledger', payload: { amount: 2 }, payloadType: 'Entry' },
      { payload: { ok: true } },
      { payload: { ok: false }, payloadType: 'Done' },
    ]);
    expect(seen).toEqual({ self: 'billing', payload: { amount: 1 }, history: [] });
    // The runtime's context is seen through, not changed.
    expect('send' in ctx).toBe(false);
    expect(handlerListener(h)).toBe('billing');
    expect(handlerListener(() => undefined)).toBeUndefined();
  });

  it('with one function per payload type, runs the one of ctx.payloadType and refuses a type it has none for', async () => {
    const h = desk;
    expect(await h({ id: 7 }, context({ payloadType: 'Ticket' }))).toEqual({ to: 'tech', payload: { id: 7 } });
    expect(await h({ ok: true }, context({ payloadType: 'Approval' }))).toBeUndefined();
    expect(() => h({}, context({ payloadType: 'Lookup' }))).toThrow('defineHandler(desk): no function for payload type Lookup');
  });

  it('refuses what is not a listener name or a handler', () => {
    expect(() => defineHandler('' as string, () => undefined)).toThrow('the first argument must be the listener name');
    expect(() => defineHandler('x', 42 as never)).toThrow('must be a function, or an object of one function per payload type');
  });

  it('without generated declarations, types stay loose (any listener, any peer, records)', () => {
    defineHandler('anything', (payload, ctx) => {
      expectTypeOf(payload).toEqualTypeOf<Record<string, unknown>>();
      expectTypeOf(ctx.payloadType).toEqualTypeOf<string>();
      return ctx.send('whoever', { any: 'thing' });
    });
    // send() and reply() keep their literal target and payload (so a typed handler can check them) and stay Outgoing values.
    expectTypeOf(send('sink', { text: 'a' })).toEqualTypeOf<{ readonly to: 'sink'; readonly payload: { text: string }; readonly payloadType?: never }>();
  });
});
