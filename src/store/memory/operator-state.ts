import type { OperatorStateStore } from '../../core/storage.js';

/** Operator state for an organism without a data directory (it lasts as long as the process). */
export class MemoryOperatorState implements OperatorStateStore {
  private readonly paused = new Set<string>();

  pausedAgents(): readonly string[] {
    return [...this.paused];
  }

  /** Written before it returns (a failed write throws at once); the promise is resolved. */
  setPaused(agent: string, paused: boolean): Promise<void> {
    if (paused) this.paused.add(agent);
    else this.paused.delete(agent);
    return Promise.resolve();
  }
}
