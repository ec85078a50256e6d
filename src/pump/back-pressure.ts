import { Errors } from '../errors/catalogue.js';
import { PumpState } from './pump-state.js';

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
