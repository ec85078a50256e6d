import type { Organism } from '../../organism/organism.js';
import { toFrame, type Frame } from './frames.js';
import type { WsClient } from './client.js';

/**
 * Fan-out of organism events to WebSocket clients. The bus listener only serializes the
 * frame once, keeps it in a bounded replay buffer and offers it to each client (never awaiting
 * anything), so clients can neither slow the pump nor each other.
 */
export class WsHub {
  readonly clients = new Set<WsClient>();
  private readonly ring: Frame[] = [];
  private off: (() => void) | null = null;

  constructor(
    private readonly organism: Organism,
    private readonly replayCapacity: number,
  ) {}

  start(): void {
    this.off = this.organism.bus.on((event) => {
      if (this.clients.size === 0 && this.replayCapacity === 0) return;
      const frame = toFrame(event);
      this.ring.push(frame);
      if (this.ring.length > this.replayCapacity) this.ring.splice(0, this.ring.length - this.replayCapacity);
      for (const client of this.clients) if (client.wants(frame)) client.offer(frame);
    });
  }

  stop(): void {
    this.off?.();
    this.off = null;
  }

  /** Frames after `since` still held, or null when some are gone (the client must resync). */
  replay(since: number): Frame[] | null {
    const first = this.ring[0];
    if (first === undefined) return since >= 0 ? [] : null;
    if (first.seq > since + 1) return null;
    return this.ring.filter((f) => f.seq > since);
  }

  countFrom(ip: string): number {
    let n = 0;
    for (const c of this.clients) if (c.ip === ip) n++;
    return n;
  }
}
