import { Errors } from '../errors/catalogue.js';
import type { Message } from '../core/message.js';
import { PumpState } from './pump-state.js';
import type { WorkSource } from '../core/work-source.js';

/** Shared mode, an inject waiting for room: how often it asks the store again (other processes' claims free room unannounced). */
const SHARED_ROOM_RETRY_MS = 100;

/**
 * Back-pressure and waiting: an inject waits for room in the bounded queue (or is refused as
 * busy), and stop waits for in-flight work to finish. Waiters are woken whenever work moves.
 */
export abstract class PumpBackPressure extends PumpState {
  protected readonly spaceWaiters = new Set<() => void>();
  private readonly drainWaiters = new Set<() => void>();

  protected async waitForRoom(waitMs: number): Promise<void> {
    if (this.queued < this.limits.maxQueue) return;
    if (waitMs <= 0 || !(await this.waitFor(() => this.queued < this.limits.maxQueue, waitMs, this.spaceWaiters))) {
      if (this.queued >= this.limits.maxQueue) throw Errors.ORGANISM_BUSY(this.limits.maxQueue);
    }
  }

  /**
   * Shared mode: the queue is organism-wide (the PENDING entries of every process), so the
   * store journals the inject only if there is room; else it is retried until `waitMs` ran out,
   * then refused as busy, as in embedded mode.
   */
  protected async admitShared(work: WorkSource, message: Message, waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (await work.admit([message], this.limits.maxQueue)) return;
      const left = deadline - Date.now();
      if (left <= 0 || this.status === 'stopped') throw Errors.ORGANISM_BUSY(this.limits.maxQueue);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.spaceWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, SHARED_ROOM_RETRY_MS));
        this.spaceWaiters.add(wake);
      });
    }
  }

  protected wakeSpaceWaiters(): void {
    for (const wake of this.spaceWaiters) wake();
  }

  /** Resolves true once `condition` holds (re-checked whenever work finishes), false on timeout. */
  protected waitFor(condition: () => boolean, timeoutMs: number, waiters = this.drainWaiters): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (condition() || this.status === 'stopped') {
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

  protected notifyProgress(): void {
    for (const check of [...this.drainWaiters]) check();
    if (this.queued < this.limits.maxQueue) for (const check of [...this.spaceWaiters]) check();
  }
}
