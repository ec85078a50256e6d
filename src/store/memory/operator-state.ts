import type { OperatorStateStore } from '../../core/storage.js';
import type { ThreadHold } from '../../core/thread.js';

/** Operator state for an organism without a data directory (it lasts as long as the process). */
export class MemoryOperatorState implements OperatorStateStore {
  private readonly paused = new Set<string>();
  private readonly holds = new Map<string, ThreadHold>();

  pausedAgents(): readonly string[] {
    return [...this.paused];
  }

  /** Written before it returns (a failed write throws at once); the promise is resolved. */
  setPaused(agent: string, paused: boolean): Promise<void> {
    if (paused) this.paused.add(agent);
    else this.paused.delete(agent);
    return Promise.resolve();
  }

  async threadHold(threadId: string): Promise<ThreadHold | null> {
    return this.holds.get(threadId) ?? null;
  }

  async heldThreads(): Promise<readonly ThreadHold[]> {
    return [...this.holds.values()].filter((h) => h.held).sort((a, b) => a.heldAt - b.heldAt);
  }

  async setThreadHold(hold: ThreadHold): Promise<void> {
    this.holds.set(hold.threadId, hold);
  }
}
