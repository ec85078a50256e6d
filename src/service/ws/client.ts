import type { WebSocket } from 'ws';
import type { Frame } from './frames.js';
import { matches, type WsFilter } from './filter.js';
import { rawSocketOf, wireOf } from './wire.js';

export type Channel = 'control' | 'messages';

/** A client's batch is written early once it holds this many bytes. */
const BATCH_FLUSH_BYTES = 64 * 1024;

/**
 * One connected socket. Frames go out only while the socket's own send buffer is under its
 * bound; past it the client stops receiving frames and is marked lagging (a resync snapshot is
 * due once it drains, or it is closed when it stays backed up), so a slow reader never holds
 * unbounded memory nor slows the pump or the other clients.
 */
export class WsClient {
  filter: WsFilter;
  /** Frames were dropped for this client: a resync is due. */
  lagging = false;
  laggingSince = 0;
  missedPings = 0;
  /** Until the first frame (snapshot) is out, live frames wait here (bounded like the socket). */
  private opening: Frame[] | null = [];
  private openingBytes = 0;
  /** Event frames waiting for the hub's next batch (see WsLimits.batchMs). */
  private batch: Frame[] = [];
  private batchBytes = 0;

  constructor(
    readonly socket: WebSocket,
    readonly channel: Channel,
    readonly role: 'operator' | 'viewer' | 'approver',
    filter: WsFilter,
    private readonly sendBufferBytes: number,
  ) {
    this.filter = filter;
  }

  wants(frame: Frame): boolean {
    if (this.channel === 'messages' && !frame.meta.isMessage) return false;
    // A model's live text is what the operator-only llm-calls routes show: viewers never get it.
    if (frame.meta.event === 'llm_delta' && this.role !== 'operator') return false;
    return matches(this.filter, frame.meta);
  }

  /** Queues or sends a frame unless the client is backed up; returns false when it was dropped. */
  offer(frame: Frame): boolean {
    if (this.lagging) return false;
    if (this.opening) {
      if (this.openingBytes + frame.json.length > this.sendBufferBytes) return this.markLagging();
      this.opening.push(frame);
      this.openingBytes += frame.json.length;
      return true;
    }
    if (this.socket.bufferedAmount > this.sendBufferBytes) return this.markLagging();
    this.batch.push(frame);
    this.batchBytes += frame.json.length;
    // A big batch goes out at once: batching saves writes, it must not hold much memory.
    if (this.batchBytes >= BATCH_FLUSH_BYTES) this.flush();
    return true;
  }

  /**
   * Writes the waiting event frames in one go: their shared wire bytes (see wire.ts) in a
   * single write to the TCP socket. Frames are whole and Node keeps writes in order, so this
   * interleaves safely with what `ws` itself sends (pings, replies, close).
   */
  flush(): void {
    if (this.batch.length === 0) return;
    const frames = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    if (this.socket.readyState !== this.socket.OPEN) return;
    const raw = rawSocketOf(this.socket);
    if (!raw) {
      for (const f of frames) this.socket.send(f.json);
      return;
    }
    raw.write(frames.length === 1 ? wireOf(frames[0]!) : Buffer.concat(frames.map(wireOf)));
  }

  /** Sends the first frame, then whatever arrived meanwhile. */
  open(firstJson: string): void {
    const waiting = this.opening ?? [];
    this.opening = null;
    this.openingBytes = 0;
    this.send(firstJson);
    for (const f of waiting) this.send(f.json);
  }

  /** Sends at once (replies, snapshots), after any batched frames so that seqs stay in order. */
  send(json: string): void {
    this.flush();
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(json);
  }

  /** True once the backlog has drained enough to catch up with a snapshot. */
  get drained(): boolean {
    return this.socket.bufferedAmount <= this.sendBufferBytes / 2;
  }

  /** Leaves the lagging state; live frames wait again until the resync snapshot is out (`open`). */
  recovered(): void {
    this.lagging = false;
    this.laggingSince = 0;
    this.opening = [];
    this.openingBytes = 0;
  }

  private markLagging(): false {
    this.lagging = true;
    this.batch = [];
    this.batchBytes = 0;
    this.laggingSince = Date.now();
    this.opening = this.opening ? [] : null;
    this.openingBytes = 0;
    return false;
  }
}
