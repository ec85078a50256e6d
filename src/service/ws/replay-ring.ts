import type { Frame } from './frames.js';

/**
 * The newest event frames, in seq order, for `since` replay. A fixed-size circular buffer:
 * pushing onto a full ring overwrites the oldest frame in O(1) (an array shifted on every
 * event cost O(capacity) per event under load).
 */
export class ReplayRing {
  private readonly slots: Array<Frame | undefined>;
  private head = 0; // index of the oldest frame
  private size = 0;
  /** Highest seq of a frame evicted so far (or given at creation: produced before the ring). */
  lostUpTo: number;

  constructor(
    readonly capacity: number,
    lostUpTo: number,
  ) {
    this.slots = new Array<Frame | undefined>(Math.max(0, capacity));
    this.lostUpTo = lostUpTo;
  }

  get length(): number {
    return this.size;
  }

  push(frame: Frame): void {
    if (this.capacity <= 0) {
      this.lostUpTo = frame.seq;
      return;
    }
    if (this.size < this.capacity) {
      this.slots[(this.head + this.size) % this.capacity] = frame;
      this.size++;
      return;
    }
    this.lostUpTo = this.slots[this.head]!.seq;
    this.slots[this.head] = frame;
    this.head = (this.head + 1) % this.capacity;
  }

  /**
   * A thread was erased (issue 30): its frames leave the ring, with every older frame (the ring
   * stays a contiguous run of seqs), so a client resuming from before them gets a resync instead
   * of the erased text.
   */
  dropThread(threadId: string): void {
    let last = -1;
    for (let i = 0; i < this.size; i++) if (this.slots[(this.head + i) % this.capacity]!.meta.threadId === threadId) last = i;
    if (last < 0) return;
    this.lostUpTo = this.slots[(this.head + last) % this.capacity]!.seq;
    for (let i = 0; i <= last; i++) this.slots[(this.head + i) % this.capacity] = undefined;
    this.head = (this.head + last + 1) % this.capacity;
    this.size -= last + 1;
  }

  /** Frames with seq > `since`, oldest first. */
  after(since: number): Frame[] {
    const out: Frame[] = [];
    for (let i = 0; i < this.size; i++) {
      const frame = this.slots[(this.head + i) % this.capacity]!;
      if (frame.seq > since) out.push(frame);
    }
    return out;
  }
}
