import { describe, expect, it } from 'vitest';
import type { ListenerConfig } from '../../src/config/types.js';
import type { Message } from '../../src/core/message.js';
import { DeliveryObservers, type DeliveryObserver, type DeliveryOutcome } from '../../src/pump/observer.js';

const message = { id: 'm1', threadId: 't1' } as Message;
const listener = { name: 'hop1' } as ListenerConfig;

function recorder(name: string, log: string[], traceContext: string | null = null): DeliveryObserver {
  return {
    injected: () => traceContext,
    started: () => {
      log.push(`${name} started`);
      return {
        run: (fn) => {
          log.push(`${name} run`);
          return fn();
        },
        logFields: null,
        get traceContext() {
          log.push(`${name} traceContext`);
          return traceContext;
        },
        end: (outcome: DeliveryOutcome) => log.push(`${name} end ${outcome.acked ? 'acked' : outcome.reason}`),
      };
    },
  };
}

describe('DeliveryObservers', () => {
  it('with no observer, runs the handler as it is and carries no trace context', () => {
    const observers = new DeliveryObservers(() => {});
    expect(observers.active).toBe(false);
    const watch = observers.started(message, listener);
    expect(watch.run(() => 42)).toBe(42);
    expect(watch.traceContext).toBeNull();
    expect(observers.injected()).toBeNull();
  });

  it('reads a trace context only when asked (a tracer may format it then)', () => {
    const log: string[] = [];
    const observers = new DeliveryObservers(() => {});
    observers.add(recorder('a', log, '00-ctx'));
    const watch = observers.started(message, listener);
    expect(log).toEqual(['a started']);
    expect(watch.run(() => 'result')).toBe('result');
    expect(watch.traceContext).toBe('00-ctx');
    watch.end({ acked: true });
    expect(log).toEqual(['a started', 'a run', 'a traceContext', 'a end acked']);
  });

  it('nests several observers, takes the first trace context, ends every one', () => {
    const log: string[] = [];
    const observers = new DeliveryObservers(() => {});
    observers.add(recorder('a', log));
    observers.add(recorder('b', log, '00-b'));
    const watch = observers.started(message, listener);
    expect(watch.run(() => 7)).toBe(7);
    expect(watch.traceContext).toBe('00-b');
    expect(observers.injected()).toBe('00-b');
    watch.end({ acked: false, reason: 'timeout', error: 'slow' });
    expect(log.filter((l) => !l.endsWith('traceContext'))).toEqual(['a started', 'b started', 'a run', 'b run', 'a end timeout', 'b end timeout']);
  });

  it('isolates an observer that throws: the delivery runs, the error is reported', () => {
    const errors: unknown[] = [];
    const observers = new DeliveryObservers((err) => errors.push(err));
    const boom = (what: string) => () => {
      throw new Error(what);
    };
    observers.add({ injected: boom('injected'), started: boom('started') });
    expect(observers.injected()).toBeNull();
    const watch = observers.started(message, listener);
    expect(watch.run(() => 'ran')).toBe('ran');
    watch.end({ acked: true });
    expect(errors.map((e) => (e as Error).message)).toEqual(['injected', 'started']);

    const failing = new DeliveryObservers((err) => errors.push(err));
    failing.add({
      injected: () => null,
      started: () => ({
        run: (fn) => fn(),
        logFields: null,
        get traceContext(): string | null {
          throw new Error('traceContext');
        },
        end: boom('end'),
      }),
    });
    const w = failing.started(message, listener);
    expect(w.traceContext).toBeNull();
    expect(() => w.end({ acked: true })).not.toThrow();
    expect(errors.map((e) => (e as Error).message).slice(2)).toEqual(['traceContext', 'end']);
  });

  it('stops following deliveries once removed', () => {
    const log: string[] = [];
    const observers = new DeliveryObservers(() => {});
    const off = observers.add(recorder('a', log));
    off();
    expect(observers.active).toBe(false);
    observers.started(message, listener).end({ acked: true });
    expect(log).toEqual([]);
  });
});
