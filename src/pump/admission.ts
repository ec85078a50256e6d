import type { Message } from '../core/message.js';
import { Errors } from '../errors/catalogue.js';
import type { PumpState } from './state.js';

/** An inject the queue refused as full asks again this often (other processes' claims free room unannounced). */
const ROOM_RETRY_MS = 100;

/**
 * Back-pressure: an inject waits for room in the bounded queue (or is refused as busy), and
 * stop waits for in-flight work to finish. Waiters are woken whenever work moves.
 */
export class Admission {
  private readonly spaceWaiters = new Set<() => void>();
  private readonly drainWaiters = new Set<() => void>();

  constructor(private readonly state: PumpState) {}

  /** Waits up to `waitMs` for room in this process's queue; else refuses the inject as busy. */
  async waitForRoom(waitMs: number): Promise<void> {
    const { state } = this;
    if (state.queued < state.limits.maxQueue) return;
    if (waitMs <= 0 || !(await this.waitFor(() => state.queued < state.limits.maxQueue, waitMs, this.spaceWaiters))) {
      if (state.queued >= state.limits.maxQueue) throw Errors.ORGANISM_BUSY(state.limits.maxQueue);
    }
  }

  /**
   * Journals an inject PENDING through the queue, which writes it only if the organism's queue
   * has room (a cluster's is every process's PENDING entries); else it asks again until
   * `waitMs` ran out, then the inject is refused as busy.
   */
  async admit(message: Message, waitMs: number): Promise<void> {
    const { state } = this;
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (await state.deps.queue.admit([message], state.limits.maxQueue)) return;
      const left = deadline - Date.now();
      if (left <= 0 || state.status === 'stopped') throw Errors.ORGANISM_BUSY(state.limits.maxQueue);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.spaceWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, ROOM_RETRY_MS));
        this.spaceWaiters.add(wake);
      });
    }
  }

  wakeSpaceWaiters(): void {
    for (const wake of this.spaceWaiters) wake();
  }

  /** Resolves true once `condition` holds (re-checked whenever work finishes), false on timeout. */
  waitFor(condition: () => boolean, timeoutMs: number, waiters = this.drainWaiters): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (condition() || this.state.status === 'stopped') {
          cleanup();
          resolve(condition());
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        resolve(condition());
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
    });
  }

  notifyProgress(): void {
    for (const check of [...this.drainWaiters]) check();
    if (this.state.queued < this.state.limits.maxQueue) for (const check of [...this.spaceWaiters]) check();
  }
}
