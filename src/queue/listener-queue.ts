import type { Message } from '../core/message.js';

/**
 * The queue of one listener. Messages are FIFO within a thread, and a thread has at most one
 * delivery in flight per listener, so a conversation is handled in order while different
 * threads proceed concurrently. All operations are O(1) amortized.
 */
export class ListenerQueue {
  private readonly byThread = new Map<string, Message[]>();
  /** Threads with queued messages and no delivery in flight, in arrival order. */
  private readonly ready: string[] = [];
  private readyHead = 0;
  private readonly readySet = new Set<string>();
  private readonly busy = new Set<string>();
  /** Threads whose head is a retry waiting out its backoff: not ready until woken. */
  private readonly sleeping = new Set<string>();
  private count = 0;

  /** held: threads held by an operator or the loop breaker (shared by every listener's queue): not taken until woken. */
  constructor(private readonly held: ReadonlySet<string> = new Set()) {}

  get size(): number {
    return this.count;
  }

  push(message: Message): void {
    const list = this.byThread.get(message.threadId);
    if (list) list.push(message);
    else this.byThread.set(message.threadId, [message]);
    this.count++;
    this.markReady(message.threadId);
  }

  /** Puts a message back at the head of its thread (used when a dispatch could not start). */
  unshift(message: Message): void {
    const list = this.byThread.get(message.threadId);
    if (list) list.unshift(message);
    else this.byThread.set(message.threadId, [message]);
    this.count++;
    this.markReady(message.threadId);
  }

  /**
   * Puts a retry at the head of its thread (it is older than whatever of the thread came for
   * this listener since) and keeps the thread from being taken until `wake`: the thread's later
   * messages wait behind it, other threads go on.
   */
  defer(message: Message): void {
    this.sleeping.add(message.threadId);
    this.unshift(message);
  }

  /** A deferred retry's time came: its thread may be taken again. */
  wake(threadId: string): void {
    if (!this.sleeping.delete(threadId)) return;
    if (this.byThread.has(threadId)) this.markReady(threadId);
  }

  /** A held thread was resumed: its messages may be taken again (a retry still waits out its backoff). */
  unheld(threadId: string): void {
    if (this.byThread.has(threadId)) this.markReady(threadId);
  }

  hasReady(): boolean {
    return this.ready.length - this.readyHead > 0;
  }

  /** Takes the next message whose thread is not busy and marks the thread busy. */
  take(): Message | undefined {
    while (this.readyHead < this.ready.length) {
      const threadId = this.ready[this.readyHead++]!;
      this.readySet.delete(threadId);
      this.compact();
      const list = this.byThread.get(threadId);
      // A held thread leaves the ready list; its resume (wake) puts it back.
      if (!list || list.length === 0 || this.busy.has(threadId) || this.held.has(threadId)) continue;
      const message = list.shift()!;
      if (list.length === 0) this.byThread.delete(threadId);
      this.count--;
      this.busy.add(threadId);
      return message;
    }
    return undefined;
  }

  /** The delivery of a thread finished: its next message (if any) becomes ready. */
  release(threadId: string): void {
    this.busy.delete(threadId);
    if (this.byThread.has(threadId)) this.markReady(threadId);
  }

  /** Removes and returns every queued message of a thread. */
  drainThread(threadId: string): Message[] {
    const list = this.byThread.get(threadId) ?? [];
    this.byThread.delete(threadId);
    this.sleeping.delete(threadId);
    this.count -= list.length;
    return list;
  }

  /** Removes and returns everything queued. */
  drainAll(): Message[] {
    const all: Message[] = [];
    for (const list of this.byThread.values()) all.push(...list);
    this.byThread.clear();
    this.sleeping.clear();
    this.ready.length = 0;
    this.readyHead = 0;
    this.readySet.clear();
    this.count = 0;
    return all;
  }

  private markReady(threadId: string): void {
    if (this.busy.has(threadId) || this.sleeping.has(threadId) || this.held.has(threadId) || this.readySet.has(threadId)) return;
    this.readySet.add(threadId);
    this.ready.push(threadId);
  }

  private compact(): void {
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready.splice(0, this.readyHead);
      this.readyHead = 0;
    }
  }
}
