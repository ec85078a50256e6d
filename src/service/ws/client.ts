import type { WebSocket } from 'ws';
import type { Frame } from './frames.js';
import { matches, type WsFilter } from './filter.js';

export type Channel = 'control' | 'messages';

/**
 * One connected socket. Frames are sent only while the socket's own buffer is below its
 * bound; past it the client stops receiving frames and is marked for a resync snapshot, so a
 * slow reader never holds memory for others nor slows the pump.
 */
export class WsClient {
  filter: WsFilter;
  /** Set when frames were dropped for this client; a resync snapshot is due. */
  lagging = false;
  laggingSince = 0;
  missedPings = 0;

  constructor(
    readonly socket: WebSocket,
    readonly channel: Channel,
    readonly role: 'operator' | 'viewer',
    readonly ip: string,
    filter: WsFilter,
    private readonly sendBufferBytes: number,
  ) {
    this.filter = filter;
  }

  wants(frame: Frame): boolean {
    if (this.channel === 'messages' && !frame.meta.isMessage) return false;
    return matches(this.filter, frame.meta);
  }

  /** Sends unless the socket is backed up; returns false when the frame was dropped. */
  offer(frame: Frame): boolean {
    if (this.lagging) return false;
    if (this.socket.bufferedAmount > this.sendBufferBytes) {
      this.lagging = true;
      this.laggingSince = Date.now();
      return false;
    }
    this.send(frame.json);
    return true;
  }

  send(json: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(json);
  }

  /** True once the backlog has drained enough to catch up with a snapshot. */
  get drained(): boolean {
    return this.socket.bufferedAmount <= this.sendBufferBytes / 2;
  }
}
