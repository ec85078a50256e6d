import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Frame } from '../../src/service/ws/frames.js';
import { ReplayRing } from '../../src/service/ws/replay-ring.js';

const frame = (seq: number): Frame => ({ seq, json: `{"seq":${seq}}`, meta: { event: 'message', threadId: null, agents: [], payloadType: null, isMessage: true } });

describe('ReplayRing', () => {
  it('keeps the newest frames in seq order and remembers the last one it dropped', () => {
    const ring = new ReplayRing(3, 0);
    for (let seq = 1; seq <= 5; seq++) ring.push(frame(seq));
    expect(ring.length).toBe(3);
    expect(ring.after(0).map((f) => f.seq)).toEqual([3, 4, 5]);
    expect(ring.after(4).map((f) => f.seq)).toEqual([5]);
    expect(ring.lostUpTo).toBe(2);
  });

  it('an erased thread leaves the ring with every older frame (a resume from before them resyncs)', () => {
    const ring = new ReplayRing(5, 0);
    const of = (seq: number, threadId: string | null): Frame => ({ ...frame(seq), meta: { ...frame(seq).meta, threadId } });
    for (let seq = 1; seq <= 7; seq++) ring.push(of(seq, seq === 4 ? 'erased' : 'kept'));
    ring.dropThread('erased');
    expect(ring.after(0).map((f) => f.seq)).toEqual([5, 6, 7]);
    expect(ring.lostUpTo).toBe(4);
    ring.dropThread('nothing');
    expect(ring.length).toBe(3);
    for (let seq = 8; seq <= 11; seq++) ring.push(of(seq, 'kept'));
    expect(ring.after(0).map((f) => f.seq)).toEqual([7, 8, 9, 10, 11]);
    expect(ring.lostUpTo).toBe(6);
  });

  it('a ring of capacity 0 keeps nothing and counts every frame as lost', () => {
    const ring = new ReplayRing(0, 7);
    ring.push(frame(8));
    expect(ring.after(0)).toEqual([]);
    expect(ring.lostUpTo).toBe(8);
  });

  it('behaves as the newest `capacity` frames of the whole sequence, for any capacity and length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (capacity, count, since) => {
        const ring = new ReplayRing(capacity, 0);
        const all: number[] = [];
        for (let seq = 1; seq <= count; seq++) {
          ring.push(frame(seq));
          all.push(seq);
        }
        const kept = all.slice(-capacity);
        expect(ring.after(since).map((f) => f.seq)).toEqual(kept.filter((s) => s > since));
        expect(ring.lostUpTo).toBe(count > capacity ? count - capacity : 0);
      }),
    );
  });
});
