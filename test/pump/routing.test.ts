import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { reply, send } from '../../src/core/handler.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { listener, settled, startOrganism, eventually } from './harness.js';

describe('routing and peer isolation', () => {
  it('keeps one thread id across every hop and records participants in order of appearance', async () => {
    const seen: string[] = [];
    const { organism } = await startOrganism([
      listener('a', { peers: ['b'], handler: (p, ctx) => (seen.push(ctx.threadId), send('b', { text: `${p['text']}!` })) }),
      listener('b', { peers: ['c'], handler: (p, ctx) => (seen.push(ctx.threadId), send('c', p)) }),
      listener('c', { handler: (_p, ctx) => void seen.push(ctx.threadId) }),
    ]);
    const { threadId } = await organism.inject('a', { text: 'hi' });
    const thread = await settled(organism, threadId);
    expect(seen).toEqual([threadId, threadId, threadId]);
    expect(thread.status).toBe('completed');
    expect(thread.participants).toEqual(['api', 'a', 'b', 'c']);
    expect(thread.messageCount).toBe(3);
    await organism.stop();
  });

  it('stamps the sender itself: a handler cannot forge "from"', async () => {
    const received: string[] = [];
    const { organism } = await startOrganism([
      listener('a', { peers: ['b'], handler: () => ({ to: 'b', payload: { text: 'x' }, from: 'admin' }) as never }),
      listener('b', { handler: (_p, ctx) => void received.push(ctx.from) }),
    ]);
    const { threadId } = await organism.inject('a', { text: 'go' });
    await settled(organism, threadId);
    expect(received).toEqual(['a']);
    await organism.stop();
  });

  it('refuses a message to a non-peer, tells the sender with a SystemError and audits peer_denied', async () => {
    const cCalls: unknown[] = [];
    const aSaw: string[] = [];
    const { organism, events } = await startOrganism([
      listener('a', { agent: true, peers: ['b'], handler: (_p, ctx) => (aSaw.push(ctx.payloadType), send('c', { text: 'sneaky' })) }),
      listener('b'),
      listener('c', { handler: (p) => void cCalls.push(p) }),
    ]);
    const { threadId } = await organism.inject('a', { text: 'go' });
    await settled(organism, threadId);
    expect(cCalls).toEqual([]);
    const denied = events.find((e) => e.type === 'peer_denied');
    expect(denied).toMatchObject({ type: 'peer_denied', from: 'a', to: 'c', threadId });
    const notice = events.find((e) => e.type === 'message' && e.message.to === 'a' && e.message.payloadType === SYSTEM_ERROR_TYPE);
    expect(notice).toBeDefined();
    if (notice?.type === 'message') {
      expect(notice.message.payload['error']).toBe(Errors.PEER_DENIED('a', 'c').detail);
      expect(notice.message.payload['reason']).toBe('peer_denied');
    }
    const failed = events.find((e) => e.type === 'journal_failed' && e.reason === 'peer_denied');
    expect(failed).toBeDefined();
    await organism.stop();
  });

  it('an empty peers list means no peers at all; replying to the sender is still allowed', async () => {
    const replies: unknown[] = [];
    const { organism, events } = await startOrganism([
      listener('asker', { peers: ['loner'], handler: (p, ctx) => (ctx.from === 'loner' ? void replies.push(p) : send('loner', p)) }),
      listener('loner', { peers: [], handler: (p) => [reply({ text: `re: ${p['text']}` }), send('bystander', { text: 'direct' })] }),
      listener('bystander', { handler: () => void replies.push('bystander reached') }),
    ]);
    const { threadId } = await organism.inject('asker', { text: 'ping' });
    await settled(organism, threadId);
    // The reply (to the sender) arrives; the explicit send to a non-peer is refused.
    expect(replies).toEqual([{ text: 're: ping' }]);
    expect(events.some((e) => e.type === 'peer_denied' && e.from === 'loner' && e.to === 'bystander')).toBe(true);
    await organism.stop();
  });

  it('a non-peer target gets the same refusal whether or not it exists (no topology leaks)', async () => {
    const { organism, events } = await startOrganism([listener('a', { peers: [], handler: () => [send('exists', { text: '1' }), send('ghost', { text: '2' })] }), listener('exists')]);
    const { threadId } = await organism.inject('a', { text: 'go' });
    await settled(organism, threadId);
    const denials = events.filter((e) => e.type === 'peer_denied').map((e) => (e.type === 'peer_denied' ? e.reason : ''));
    expect(denials).toEqual([Errors.PEER_DENIED('a', 'exists').detail, Errors.PEER_DENIED('a', 'ghost').detail]);
    await organism.stop();
  });

  it('validates payloads before delivery: an invalid outgoing payload fails the delivery', async () => {
    const bCalls: unknown[] = [];
    const { organism, events } = await startOrganism([listener('a', { peers: ['b'], handler: () => send('b', { text: 42 }) }), listener('b', { handler: (p) => void bCalls.push(p) })]);
    const { threadId } = await organism.inject('a', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(bCalls).toEqual([]);
    expect(thread.status).toBe('error');
    const failure = events.find((e) => e.type === 'journal_failed' && e.reason === 'invalid_result');
    expect(failure?.type === 'journal_failed' && failure.error).toContain('text');
    // The sender of the failed delivery (api) is told why.
    expect(events.some((e) => e.type === 'message' && e.message.to === 'api' && e.message.payloadType === SYSTEM_ERROR_TYPE)).toBe(true);
    await organism.stop();
  });

  it('inject refuses an unknown target with the spec text', async () => {
    const { organism } = await startOrganism([listener('a')]);
    await expect(organism.inject('nobody', { text: 'x' })).rejects.toThrow('Unknown target agent: nobody');
    await organism.stop();
  });

  it('inject validates the payload against the target type, naming every bad field', async () => {
    const { organism } = await startOrganism([listener('a', { payload: 'Num' })]);
    await expect(organism.inject('a', { Num: { n: 'seven' } })).rejects.toMatchObject({ status: 422 });
    await expect(organism.inject('a', { n: 1.5 })).rejects.toThrow(/n/);
    await organism.stop();
  });

  it('propagates thread metadata along every hop', async () => {
    const seen: Array<Record<string, string>> = [];
    const { organism } = await startOrganism([
      listener('a', { peers: ['b'], handler: (p, ctx) => (seen.push({ ...ctx.metadata }), send('b', p)) }),
      listener('b', { handler: (_p, ctx) => void seen.push({ ...ctx.metadata }) }),
    ]);
    const { threadId } = await organism.inject('a', { text: 'x' }, { metadata: { orgId: 'acme', userId: 'u1' } });
    await settled(organism, threadId);
    expect(seen).toEqual([
      { orgId: 'acme', userId: 'u1' },
      { orgId: 'acme', userId: 'u1' },
    ]);
    await organism.stop();
  });

  it('stops a runaway loop at the hop limit and tells the sender', async () => {
    let calls = 0;
    const { organism, events } = await startOrganism(
      [listener('ping', { peers: ['pong'], handler: (p) => (calls++, send('pong', p)) }), listener('pong', { peers: ['ping'], handler: (p) => (calls++, send('ping', p)) })],
      { maxHops: 5 },
    );
    const { threadId } = await organism.inject('ping', { text: 'ball' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(calls).toBe(6); // hops 0..5 delivered, hop 6 refused
    const refused = events.find((e) => e.type === 'journal_failed' && e.reason === 'hop_limit');
    expect(refused?.type === 'journal_failed' && refused.error).toBe(Errors.HOP_LIMIT(5, threadId).detail);
    await organism.stop();
  });

  it('handles a reply to the outside world as the thread result', async () => {
    const { organism, events } = await startOrganism([listener('echo', { handler: (p) => reply({ text: `echo ${p['text']}` }, 'Text') })]);
    const { threadId } = await organism.inject('echo', { text: 'hi' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('completed');
    const out = await eventually(() => events.find((e) => e.type === 'message' && e.message.to === 'api' && e.state === 'ACKED'));
    expect(out.type === 'message' && out.message.payload).toEqual({ text: 'echo hi' });
    await organism.stop();
  });
});
