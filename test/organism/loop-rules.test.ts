import { describe, expect, it } from 'vitest';
import { canonicalJson, cycleFinding, payloadHash, repeatFinding, velocityFinding, type Hop } from '../../src/organism/loop-rules.js';
import { overlay } from '../../src/organism/holds.js';
import type { ThreadHold, ThreadRecord } from '../../src/core/thread.js';

const hop = (from: string, to: string, payload: unknown = { text: 'same' }): Hop => ({ from, to, hash: payloadHash('Text', payload) });

/** `n` hops around the cycle `parties` (a -> b -> ... -> a), payloads from `payload(i)`. */
function around(parties: string[], n: number, payload: (i: number) => unknown = () => ({ text: 'same' })): Hop[] {
  return Array.from({ length: n }, (_, i) => hop(parties[i % parties.length]!, parties[(i + 1) % parties.length]!, payload(i)));
}

describe('the loop breaker rules', () => {
  it('hashes canonical JSON: keys sorted, no whitespace, nothing else normalised', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 2, y: 'x' }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":"x","z":2}]},"b":1}');
    expect(payloadHash('T', { a: 1, b: 2 })).toBe(payloadHash('T', { b: 2, a: 1 }));
    expect(payloadHash('T', { n: 1 })).not.toBe(payloadHash('T', { n: 2 }));
    expect(payloadHash('T', { s: 'a b' })).not.toBe(payloadHash('T', { s: 'a  b' }));
    expect(payloadHash('T', { n: 1 })).not.toBe(payloadHash('U', { n: 1 }));
  });

  it('repeat: the same edge and payload more than N times', () => {
    const hops = [hop('x', 'y'), hop('x', 'y', { text: 'other' }), hop('x', 'y'), hop('x', 'y')];
    expect(repeatFinding(hops, hops[3]!, 3)).toBeNull();
    expect(repeatFinding([...hops, hop('x', 'y')], hop('x', 'y'), 3)).toMatchObject({ rule: 'repeat', edges: [{ from: 'x', to: 'y' }], evidence: { count: 4, limit: 3 } });
  });

  it('cycle: a -> b -> a and a -> b -> c -> a repeated more than N times without a new payload', () => {
    const limit = () => 3;
    // Two hops make the first pass; each further pass of 2 with nothing new is a repetition.
    expect(cycleFinding([hop('api', 'a'), ...around(['a', 'b'], 2 + 6)], 4, limit)).toBeNull();
    expect(cycleFinding([hop('api', 'a'), ...around(['a', 'b'], 2 + 8)], 4, limit)).toMatchObject({ rule: 'cycle', evidence: { cycleLength: 2, repetitions: 4, limit: 3 } });
    const three = cycleFinding(around(['a', 'b', 'c'], 3 + 12), 4, limit);
    expect(three).toMatchObject({ rule: 'cycle', evidence: { cycleLength: 3, repetitions: 4 } });
    expect(three!.reason).toContain('-> a');
    // A cycle longer than max_cycle_length is not looked for.
    expect(cycleFinding(around(['a', 'b', 'c'], 3 + 12), 2, limit)).toBeNull();
  });

  it('cycle: new payloads on every pass are not a loop (a long conversation of distinct messages)', () => {
    expect(
      cycleFinding(
        around(['a', 'b'], 200, (i) => ({ n: i })),
        4,
        () => 3,
      ),
    ).toBeNull();
    // Payloads that repeat with a longer period than the edges still count once they stop being new.
    expect(
      cycleFinding(
        around(['a', 'b'], 40, (i) => ({ n: i % 4 })),
        4,
        () => 3,
      ),
    ).toMatchObject({ rule: 'cycle' });
  });

  it('cycle: not a closed walk, or one party talking to itself, is no cycle', () => {
    const fanOut = Array.from({ length: 30 }, (_, i) => hop('api', i % 2 ? 'a' : 'b'));
    expect(cycleFinding(fanOut, 4, () => 3)).toBeNull();
    expect(
      cycleFinding(
        Array.from({ length: 30 }, () => hop('a', 'a')),
        4,
        () => 3,
      ),
    ).toBeNull();
  });

  it('velocity: tokens in the last minute past the limit (0: off)', () => {
    expect(velocityFinding(100, 100, { from: 'a', to: 'b' })).toBeNull();
    expect(velocityFinding(101, 100, { from: 'a', to: 'b' })).toMatchObject({ rule: 'velocity', evidence: { tokensLastMinute: 101, limit: 100 } });
    expect(velocityFinding(10 ** 9, 0, { from: 'a', to: 'b' })).toBeNull();
  });
});

describe('the held status', () => {
  const record: ThreadRecord = { id: 't', status: 'waiting', participants: [], messageCount: 1, createdAt: 1, lastActivity: 2, error: null, metadata: {} };
  const hold: ThreadHold = { threadId: 't', held: true, rule: 'operator', reason: 'r', evidence: null, by: 'ops', heldAt: 3, resumedAt: null, resumedBy: null, limitFactor: 1 };
  it('takes precedence over waiting and active, never over a finished status', () => {
    expect(overlay(record, hold).status).toBe('held');
    expect(overlay({ ...record, status: 'active' }, hold).status).toBe('held');
    expect(overlay({ ...record, status: 'killed' }, hold).status).toBe('killed');
    expect(overlay(record, { ...hold, held: false }).status).toBe('waiting');
    expect(overlay(record, null)).toBe(record);
  });
});
