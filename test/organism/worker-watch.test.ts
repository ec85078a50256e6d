import { describe, expect, it } from 'vitest';
import type { ProcessList, WorkerRecord } from '../../src/core/work-source.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { WorkElsewhere } from '../../src/organism/work-elsewhere.js';
import { WorkerWatch } from '../../src/organism/worker-watch.js';
import { createLogger } from '../../src/util/logger.js';
import type { Message } from '../../src/core/message.js';

function proc(id: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id,
    kind: 'worker',
    name: id,
    host: 'h',
    pid: 1,
    handlers: true,
    configHash: 'c',
    startedAt: 1,
    heartbeatAt: 2,
    stoppedAt: null,
    alive: true,
    concurrency: null,
    inFlight: 0,
    leaseMs: 3000,
    ...over,
  };
}

describe('WorkerWatch', () => {
  it('tells nothing of the first read, then each process that joins, stops, is lost or comes back', async () => {
    let list: WorkerRecord[] = [proc('serve', { kind: 'serve' }), proc('w1'), proc('gone', { alive: false })];
    const events: OrganismEvent[] = [];
    const watch = new WorkerWatch(
      async (): Promise<ProcessList> => ({ shared: true, processes: list }),
      (e) => events.push(e),
      createLogger('silent'),
    );
    await watch.check();
    expect(events).toEqual([]);

    list = [proc('serve', { kind: 'serve' }), proc('w1', { alive: false, inFlight: 2 }), proc('w2'), proc('gone', { alive: false })];
    await watch.check();
    expect(events.map((e) => e.type === 'worker' && [e.change, e.worker.id])).toEqual([
      ['lost', 'w1'],
      ['joined', 'w2'],
    ]);
    expect(events[0]).toMatchObject({ worker: { inFlight: 2 } });

    events.length = 0;
    list = [proc('serve', { kind: 'serve' }), proc('w1'), proc('w2', { alive: false, stoppedAt: 9 })];
    await watch.check();
    expect(events.map((e) => e.type === 'worker' && [e.change, e.worker.id])).toEqual([
      ['back', 'w1'],
      ['stopped', 'w2'],
    ]);

    events.length = 0;
    await watch.check();
    expect(events).toEqual([]); // nothing changed
  });
});

describe('WorkElsewhere', () => {
  const msg = (to: string): Message =>
    ({ id: 'm', threadId: 't', from: 'a', to, payloadType: 'P', payload: {}, parentId: null, hops: 0, metadata: {}, attempt: 1, timestamp: 1 }) as unknown as Message;

  it("counts the other processes' messages and finished deliveries, never this process's own", () => {
    const w = new WorkElsewhere();
    w.record({ type: 'message', message: msg('b'), state: 'PENDING' }, 'other', 10);
    w.record({ type: 'message', message: msg('b'), state: 'ACKED' }, 'other', 20);
    w.record({ type: 'message', message: msg('b'), state: 'FAILED' }, 'third', 30);
    w.record({ type: 'message', message: msg('b'), state: 'ACKED' }, null, 40); // this process's: its pump counts it
    w.record({ type: 'agent_state', agent: 'c', state: 'processing', currentThread: 't' }, 'other', 50);
    expect(w.messages).toBe(1);
    expect(w.of('b')).toEqual({ deliveries: 2, lastActivity: 30 });
    expect(w.of('c')).toEqual({ deliveries: 0, lastActivity: 50 });
    expect(w.of('nobody')).toEqual({ deliveries: 0, lastActivity: null });
  });
});
