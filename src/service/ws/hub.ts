import type { ServiceOrganism } from '../context.js';
import { currentSeq, toFrame, type Frame } from './frames.js';
import type { Channel, WsClient } from './client.js';
import { ReplayRing } from './replay-ring.js';

/**
 * Fan-out of organism events to WebSocket clients. The bus listener serializes each frame once,
 * keeps it in a bounded replay buffer and offers it to each client; it never awaits, so clients
 * can neither slow the pump nor each other.
 */
export class WsHub {
  readonly clients = new Set<WsClient>();
  /** Frames not sent to a backed-up client, since start (for /metrics). */
  framesDropped = 0;
  /** Connections the server dropped or refused, by reason (for /metrics). */
  readonly connectionsDropped = new Map<string, number>();
  private readonly ring: ReplayRing;
  private off: (() => void) | null = null;
  private batchTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly organism: ServiceOrganism,
    replayCapacity: number,
    /** Frames offered to clients are written together at most this often; 0: at once. */
    private readonly batchMs = 0,
  ) {
    this.ring = new ReplayRing(replayCapacity, currentSeq());
  }

  start(): void {
    this.off = this.organism.queries.events.on(
      (event) => {
        const frame = toFrame(event, this.organism.redactor);
        // Token deltas are live only: replaying them after a reconnect would evict real events.
        if (event.type === 'thread_erased') this.ring.dropThread(event.threadId);
        if (event.type !== 'llm_delta') this.ring.push(frame);
        for (const client of this.clients) if (client.wants(frame) && !client.offer(frame)) this.framesDropped++;
        if (this.batchMs <= 0) this.flush();
        else this.batchTimer ??= setTimeout(() => this.flush(), this.batchMs);
      },
      { relayed: true },
    ); // live views show the work of every process of a clustered organism
  }

  /** Writes every client's waiting frames. */
  flush(): void {
    if (this.batchTimer) clearTimeout(this.batchTimer);
    this.batchTimer = null;
    for (const client of this.clients) client.flush();
  }

  stop(): void {
    this.off?.();
    this.off = null;
    this.flush();
  }

  /**
   * Event frames after `since`, or null when some may be gone (evicted, or `since` is from
   * another process: ahead of this one's seq). Seqs used by command replies are never replayed.
   */
  replay(since: number): Frame[] | null {
    if (since < this.ring.lostUpTo || since > currentSeq()) return null;
    return this.ring.after(since);
  }

  /** A connection was dropped or refused by the server; `reason` is a fixed word. */
  dropped(reason: string): void {
    this.connectionsDropped.set(reason, (this.connectionsDropped.get(reason) ?? 0) + 1);
  }

  /** Connected clients per channel, and what was dropped. */
  stats(): WsStats {
    const clients: Record<Channel, number> = { control: 0, messages: 0 };
    for (const c of this.clients) clients[c.channel]++;
    return { clients, framesDropped: this.framesDropped, connectionsDropped: new Map(this.connectionsDropped) };
  }
}

export interface WsStats {
  readonly clients: Readonly<Record<Channel, number>>;
  readonly framesDropped: number;
  readonly connectionsDropped: ReadonlyMap<string, number>;
}
