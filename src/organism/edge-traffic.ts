import type { OrganismEvent } from '../events/types.js';

export interface EdgeTrafficInfo {
  readonly from: string;
  readonly to: string;
  /** Messages sent along this edge (queued), since the process started. */
  readonly messages: number;
  /** Sends refused because `to` is not a declared peer of `from`. */
  readonly denied: number;
  /** ms since the epoch of the latest message or denial. */
  readonly lastAt: number;
}

/**
 * Counts traffic per sender -> receiver pair from the organism's events, so a topology view
 * opened late still shows what flowed (the live events only show what comes next). Bounded by
 * the number of distinct pairs, which the declared listeners and outside senders bound.
 */
export class EdgeTraffic {
  private readonly edges = new Map<string, { from: string; to: string; messages: number; denied: number; lastAt: number }>();

  record(event: OrganismEvent, now = Date.now()): void {
    if (event.type === 'message' && event.state === 'PENDING') this.edge(event.message.from, event.message.to, now).messages++;
    else if (event.type === 'peer_denied') this.edge(event.from, event.to, now).denied++;
  }

  list(): EdgeTrafficInfo[] {
    return [...this.edges.values()].map((e) => ({ ...e }));
  }

  private edge(from: string, to: string, now: number) {
    const key = `${from}\u0000${to}`;
    let e = this.edges.get(key);
    if (!e) {
      e = { from, to, messages: 0, denied: 0, lastAt: now };
      this.edges.set(key, e);
    }
    e.lastAt = now;
    return e;
  }
}
