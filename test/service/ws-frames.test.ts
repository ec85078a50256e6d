import { describe, expect, it } from 'vitest';
import { OrganismError } from '../../src/errors/catalogue.js';
import type { Message } from '../../src/core/message.js';
import { matches, NO_FILTER, parseFilter, type WsFilter } from '../../src/service/ws/filter.js';
import { currentSeq, frameJson, safeStringify, toFrame } from '../../src/service/ws/frames.js';
import { closeReason, resolveLimits, DEFAULT_WS_LIMITS } from '../../src/service/ws/limits.js';

const message = (over: Partial<Message> = {}): Message => ({
  id: 'm1',
  threadId: 't1',
  from: 'a',
  to: 'b',
  payloadType: 'Text',
  payload: { text: 'hi' },
  timestamp: Date.UTC(2025, 0, 31, 12),
  parentId: null,
  hops: 0,
  metadata: {},
  attempt: 1,
  ...over,
});

const filter = (f: Record<string, unknown>): WsFilter => {
  const parsed = parseFilter(f);
  if (parsed instanceof OrganismError) throw parsed;
  return parsed;
};

describe('frames', () => {
  it('every frame has event, an increasing seq and an ISO 8601 UTC timestamp', () => {
    const a = JSON.parse(frameJson('pong', {}).json) as { event: string; seq: number; timestamp: string };
    const b = JSON.parse(frameJson('pong', {}).json) as { seq: number };
    expect(a.event).toBe('pong');
    expect(b.seq).toBe(a.seq + 1);
    expect(currentSeq()).toBe(b.seq);
    expect(a.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('a message frame carries the message record with an ISO timestamp and the delivery state', () => {
    const f = toFrame({ type: 'message', message: message(), state: 'PENDING' });
    expect(JSON.parse(f.json)).toMatchObject({
      event: 'message',
      seq: f.seq,
      message: {
        id: 'm1',
        threadId: 't1',
        from: 'a',
        to: 'b',
        payloadType: 'Text',
        payload: { text: 'hi' },
        timestamp: '2025-01-31T12:00:00.000Z',
        parentId: null,
        deliveryState: 'PENDING',
      },
    });
    expect(f.meta).toEqual({ event: 'message', threadId: 't1', agents: ['a', 'b'], payloadType: 'Text', isMessage: true });
  });

  it('values JSON cannot hold are serialized safely: BigInt, cycles, invalid and valid dates, functions', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    const out = JSON.parse(safeStringify({ big: 10n ** 20n, cyclic, bad: new Date(Number.NaN), good: new Date(Date.UTC(2025, 0, 1)), fn: () => 1 })) as Record<string, unknown>;
    expect(out).toEqual({ big: '100000000000000000000', cyclic: { name: 'loop', self: '[Circular]' }, bad: null, good: '2025-01-01T00:00:00.000Z' });
  });

  it('an object referenced twice without a cycle is written in full both times', () => {
    const shared = { model: 'gpt-4o' };
    expect(JSON.parse(safeStringify({ a: shared, b: [shared] }))).toEqual({ a: { model: 'gpt-4o' }, b: [{ model: 'gpt-4o' }] });
  });

  it('an event the views cannot format (invalid time) still becomes a frame instead of throwing', () => {
    const f = toFrame({ type: 'message', message: message({ timestamp: Number.NaN, payload: { n: 1n } as unknown as Record<string, unknown> }), state: 'ACKED' });
    const body = JSON.parse(f.json) as Record<string, unknown>;
    expect(body).toMatchObject({ event: 'message', unformatted: true, state: 'ACKED', message: { id: 'm1', payload: { n: '1' } } });
  });

  it('maps every other event to its frame body and filter metadata', () => {
    const thread = { id: 't1', status: 'active' as const, participants: ['api', 'a'], messageCount: 1, createdAt: 0, lastActivity: 1000, error: null, metadata: {} };
    expect(JSON.parse(toFrame({ type: 'thread_created', thread }).json)).toMatchObject({
      thread: { id: 't1', createdAt: '1970-01-01T00:00:00.000Z', lastActivity: '1970-01-01T00:00:01.000Z' },
    });
    expect(toFrame({ type: 'agent_state', agent: 'a', state: 'processing', currentThread: 't1' }).meta).toMatchObject({ threadId: 't1', agents: ['a'] });
    expect(JSON.parse(toFrame({ type: 'peer_denied', from: 'a', to: 'c', threadId: 't1', messageId: 'm1', reason: 'not a peer' }).json)).toMatchObject({
      from: 'a',
      to: 'c',
      threadId: 't1',
      reason: 'not a peer',
    });
    expect(JSON.parse(toFrame({ type: 'organism_status', status: 'stopping' }).json)).toMatchObject({ event: 'organism_status', status: 'stopping' });
    expect(
      JSON.parse(
        toFrame({ type: 'reload', result: { success: true, added: ['x'], removed: [], updated: [], updatedFields: {}, changed: ['max_hops'], restartRequired: [], error: null } }).json,
      ),
    ).toMatchObject({ success: true, added: ['x'], changed: ['max_hops'], restartRequired: [] });
    const failed = toFrame({ type: 'journal_failed', message: message(), reason: 'max_attempts', error: 'boom' } as never);
    expect(JSON.parse(failed.json)).toMatchObject({ message: { deliveryState: 'FAILED' }, error: 'boom' });
    expect(failed.meta.isMessage).toBe(false);
  });
});

describe('filters', () => {
  const msg = (threadId: string, from = 'a', to = 'b', payloadType = 'Text') => ({ event: 'message', threadId, agents: [from, to], payloadType, isMessage: true });

  it('accepts camelCase, snake_case, singular and plural keys, one value or a list', () => {
    expect(filter({ thread_id: 't1', agent: ['a'], payload_types: 'Text', events: ['message'] })).toEqual({ threads: ['t1'], agents: ['a'], payloadTypes: ['Text'], events: ['message'] });
    expect(filter({ threads: ['t1', 't2'], payloadType: ['X', 'Y'] })).toMatchObject({ threads: ['t1', 't2'], payloadTypes: ['X', 'Y'] });
    expect(filter({})).toEqual(NO_FILTER);
  });

  it('refuses values that are not strings and unknown event names, naming them', () => {
    expect((parseFilter({ threads: [1] }) as OrganismError).detail).toBe('Invalid filter: threads must be a string or a list of strings');
    expect((parseFilter({ events: ['mesage'] }) as OrganismError).detail).toMatch(/^Invalid filter: unknown event mesage; known: message, agent_state/);
  });

  it('the thread filter applies to every event that concerns a thread; organism-wide events pass', () => {
    const f = filter({ threads: ['t1'] });
    expect(matches(f, msg('t1'))).toBe(true);
    expect(matches(f, msg('t2'))).toBe(false);
    for (const event of ['agent_state', 'thread_updated', 'usage', 'budget_warning', 'peer_denied', 'journal_failed']) {
      expect(matches(f, { event, threadId: 't2', agents: ['a'], payloadType: null, isMessage: false })).toBe(false);
      expect(matches(f, { event, threadId: 't1', agents: ['a'], payloadType: null, isMessage: false })).toBe(true);
    }
    // an agent going idle is on no thread: not part of a thread-filtered view
    expect(matches(f, { event: 'agent_state', threadId: null, agents: ['a'], payloadType: null, isMessage: false })).toBe(false);
    expect(matches(f, { event: 'organism_status', threadId: null, agents: [], payloadType: null, isMessage: false })).toBe(true);
  });

  it('agents match sender or receiver; payload types apply to messages; events by kind', () => {
    expect(matches(filter({ agents: ['b'] }), msg('t', 'a', 'b'))).toBe(true);
    expect(matches(filter({ agents: ['b'] }), msg('t', 'b', 'c'))).toBe(true);
    expect(matches(filter({ agents: ['b'] }), msg('t', 'a', 'c'))).toBe(false);
    expect(matches(filter({ payloadTypes: ['Num'] }), msg('t'))).toBe(false);
    expect(matches(filter({ payloadTypes: ['Text'] }), msg('t'))).toBe(true);
    expect(matches(filter({ events: ['usage'] }), msg('t'))).toBe(false);
  });
});

describe('limits', () => {
  it('fills defaults and ignores nonsense', () => {
    expect(resolveLimits({ maxConnections: 5, maxPerIp: Number.NaN, sendBufferBytes: -1 })).toEqual({ ...DEFAULT_WS_LIMITS, maxConnections: 5 });
  });

  it('close reasons fit a close frame (123 bytes)', () => {
    expect(Buffer.byteLength(closeReason('é'.repeat(200)))).toBeLessThanOrEqual(123);
    expect(closeReason('short')).toBe('short');
  });
});
