import type { EventOrigin } from '../events/bus.js';
import type { OrganismEvent } from '../events/types.js';

/** One listener's deliveries that other processes finished, and when one of them last did something with it. */
export interface ListenerWorkElsewhere {
  readonly deliveries: number;
  readonly lastActivity: number | null;
}

const NONE: ListenerWorkElsewhere = { deliveries: 0, lastActivity: null };

/**
 * The work the other processes of a clustered organism did since this one started, as their
 * events (relayed to this process) tell it: the messages they journaled and, per listener, the
 * deliveries they finished and when. A `serve --handlers off` runs no handler, so its pump's
 * own figures say nothing of the work; these are added to them. Alone in its process
 * (embedded) nothing is relayed and every figure stays 0: the pump's own are the organism's.
 * Bounded by the number of listener names (and outside recipients) the events name.
 */
export class WorkElsewhere {
  /** Messages other processes journaled (their `message` PENDING events). */
  messages = 0;
  private readonly listeners = new Map<string, { deliveries: number; lastActivity: number | null }>();

  record(event: OrganismEvent, origin: EventOrigin, now = Date.now()): void {
    if (origin === null) return; // this process's own work is counted by its pump
    if (event.type === 'message') {
      if (event.state === 'PENDING') this.messages++;
      else if (event.state === 'ACKED' || event.state === 'FAILED') {
        const l = this.listener(event.message.to);
        l.deliveries++;
        l.lastActivity = now;
      }
    } else if (event.type === 'agent_state') {
      this.listener(event.agent).lastActivity = now;
    }
  }

  of(name: string): ListenerWorkElsewhere {
    return this.listeners.get(name) ?? NONE;
  }

  private listener(name: string) {
    let l = this.listeners.get(name);
    if (!l) this.listeners.set(name, (l = { deliveries: 0, lastActivity: null }));
    return l;
  }
}
