import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../src/pump/cancellation.js';

describe("a delivery's cancellation", () => {
  it('makes its AbortSignal only when read, and the signal follows it (aborted already when read late)', () => {
    const early = new Cancellation();
    const signal = early.signal;
    expect(early.signal).toBe(signal);
    expect(signal.aborted).toBe(false);
    early.abort('killed');
    expect([signal.aborted, signal.reason, early.aborted, early.reason]).toEqual([true, 'killed', true, 'killed']);

    const late = new Cancellation();
    late.abort('timeout');
    expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'timeout']);
  });

  it('keeps its first cause, and tells the listeners of an abort from then on once', () => {
    const c = new Cancellation();
    const heard: string[] = [];
    c.onAbort((cause) => heard.push(`a:${cause}`));
    const stop = c.onAbort((cause) => heard.push(`b:${cause}`));
    stop();
    c.abort('shutdown');
    c.abort('killed');
    c.onAbort((cause) => heard.push(`late:${cause}`));
    expect(heard).toEqual(['a:shutdown']);
    expect([c.reason, c.signal.reason]).toEqual(['shutdown', 'shutdown']);
  });
});
