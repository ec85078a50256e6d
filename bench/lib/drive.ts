import type { Organism } from '../../src/organism/organism.js';
import { sleep, until } from './stats.js';

/** Counts messages acknowledged by one listener (the end of a chain), from the event bus. */
export function ackCounter(organism: Organism, listener: string): { readonly count: number; off(): void } {
  let count = 0;
  const off = organism.bus.on((e) => {
    if (e.type === 'message' && e.state === 'ACKED' && e.message.to === listener) count++;
  });
  return {
    get count() {
      return count;
    },
    off,
  };
}

/**
 * Injects `n` messages as fast as the organism takes them: batches of `batch` concurrent
 * injects (each batch shares a journal commit), waiting for queue room when it is full.
 */
export async function injectAll(organism: Organism, to: string, n: number, batch = 500): Promise<void> {
  for (let i = 0; i < n; i += batch) {
    const size = Math.min(batch, n - i);
    const injects: Promise<unknown>[] = new Array(size);
    for (let j = 0; j < size; j++) injects[j] = organism.inject(to, { text: `m${i + j}` }, { metadata: { orgId: 'acme' }, waitMs: 120_000 });
    await Promise.all(injects);
  }
}

/** Injects `n` messages and waits until `acked()` reaches `expected` (bounded by `timeoutMs`). */
export async function pushThrough(organism: Organism, to: string, n: number, acked: () => number, expected: number, timeoutMs: number): Promise<void> {
  await injectAll(organism, to, n);
  await until(() => acked() >= expected, timeoutMs, `${expected} acknowledgements (have ${acked()})`, 2);
  // Thread records are written behind the journal: let them land too.
  await until(() => organism.activeThreads === 0, timeoutMs, 'threads to settle', 5);
  await sleep(5);
}
