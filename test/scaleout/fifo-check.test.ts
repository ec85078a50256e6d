import { describe, expect, it } from 'vitest';
import { fifoViolations } from './checks.js';
import type { RunLine } from './cluster.js';

/** The chaos run's FIFO check over a handlers' log (chaos/lib/cluster.ts), on logs written by hand. */
const line = (ev: RunLine['ev'], messageId: string, pid = 1, attempt = 1): RunLine => ({ ev, listener: 'ordered', messageId, threadId: 't', attempt, pid, t: 0 });
const threads = new Map([['t', ['m0', 'm1', 'm2']]]);

describe('fifoViolations (per-thread order from the handlers log)', () => {
  it('passes one at a time in inject order, across processes, with a run repeated after a kill', () => {
    const runs = [line('start', 'm0', 1), line('start', 'm0', 2, 2), line('end', 'm0', 2, 2), line('start', 'm1', 1), line('end', 'm1', 1), line('start', 'm2', 2), line('end', 'm2', 2)];
    expect(fifoViolations(runs, threads)).toEqual([]);
  });

  it('finds a message started before an earlier one ended', () => {
    const runs = [line('start', 'm0'), line('start', 'm1', 2), line('end', 'm0'), line('end', 'm1', 2)];
    expect(fifoViolations(runs, threads).map((v) => v.detail)).toEqual(['thread t: message 1 (m1) started on pid 2 before message(s) 0 ended']);
  });

  it('finds a message started after a later one had started', () => {
    const runs = [line('start', 'm0'), line('end', 'm0'), line('start', 'm2'), line('end', 'm2'), line('start', 'm1'), line('end', 'm1')];
    const found = fifoViolations(runs, threads).map((v) => v.detail);
    expect(found).toContain('thread t: message 2 (m2) started on pid 1 before message(s) 1 ended');
    expect(found).toContain('thread t: message 1 (m1) started on pid 1 after message 2 had started');
  });

  it('leaves out an excused late start (a worker resumed past its lease), yet counts its ends', () => {
    const runs = [line('start', 'm0', 2, 2), line('end', 'm0', 2, 2), line('start', 'm1', 2), line('end', 'm1', 2), line('start', 'm0', 1, 1), line('end', 'm0', 1, 1)];
    expect(fifoViolations(runs, threads, (r) => r.pid === 1 && r.attempt === 1 && r.messageId === 'm0')).toEqual([]);
    expect(fifoViolations(runs, threads)).toHaveLength(1);
  });
});
