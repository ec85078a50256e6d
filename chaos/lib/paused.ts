/**
 * "Paused stays paused", for both modes: thinker is paused, messages for it are held, a fault
 * hits (the caller's), and afterwards thinker must still be paused with every held message
 * still PENDING (right after the fault and 300 ms later); then it is resumed.
 */
import type { Api } from './api.js';
import type { CheckName } from './checks.js';
import { sleep, type Random } from './random.js';
import type { Accepted, Injector } from './workload.js';

type Entry = { id: string; to: string; deliveryState: string };

async function thinkerEntries(api: Api, threadId: string): Promise<Entry[]> {
  const page = await api.json<{ entries: Entry[] }>('GET', `/api/v1/journal?threadId=${threadId}&limit=100`);
  return page.entries.filter((e) => e.to === 'thinker');
}

export async function waitFor(condition: () => Promise<boolean>, deadlineMs: number): Promise<boolean> {
  const t0 = performance.now();
  while (performance.now() - t0 < deadlineMs) {
    if (await condition()) return true;
    await sleep(25);
  }
  return false;
}

/** Runs one of `ways` (picked at random) while thinker holds messages; returns the way's name. */
export async function pausedThroughFault(
  deps: { api: Api; injector: Injector; rng: Random; report: (c: CheckName, d: string) => void; cycle: number },
  ways: Readonly<Record<string, () => Promise<void>>>,
): Promise<string> {
  const { api, injector, rng, report, cycle } = deps;
  await api.json('POST', '/api/v1/agents/thinker/pause');
  const held: Accepted[] = [];
  for (let i = rng.int(2, 4); i > 0; i--) {
    const a = await injector.inject('held');
    if (a) held.push(a);
  }
  // Wait until intake has passed each held message on to thinker (held there).
  await waitFor(async () => {
    for (const h of held) if ((await thinkerEntries(api, h.threadId)).length === 0) return false;
    return true;
  }, 10_000);
  const way = rng.pick(Object.keys(ways));
  await ways[way]!();
  const checkHeld = async (when: string) => {
    const agent = await api.json<{ state: string }>('GET', '/api/v1/agents/thinker');
    if (agent.state !== 'paused') report('paused-stays-paused', `cycle ${cycle}: thinker is ${agent.state} ${when} (${way}), it was paused`);
    for (const h of held) {
      for (const e of await thinkerEntries(api, h.threadId)) {
        if (e.deliveryState !== 'PENDING') report('paused-stays-paused', `cycle ${cycle}: held message ${e.id} for the paused thinker is ${e.deliveryState} ${when} (${way})`);
      }
    }
  };
  await checkHeld('right after the restart');
  await sleep(300);
  await checkHeld('300 ms after the restart');
  await api.json('POST', '/api/v1/agents/thinker/resume');
  return way;
}
