import type { OperatorStateStore } from '../types.js';

const MAX_FINAL_CEILINGS = 100_000;

/** Operator state for an organism without a data directory (it lasts as long as the process). */
export class MemoryOperatorState implements OperatorStateStore {
  private readonly paused = new Set<string>();
  private readonly ceilings = new Map<string, number>();

  pausedAgents(): readonly string[] {
    return [...this.paused];
  }

  setPaused(agent: string, paused: boolean): void {
    if (paused) this.paused.add(agent);
    else this.paused.delete(agent);
  }

  finalCeiling(threadId: string): number | null {
    return this.ceilings.get(threadId) ?? null;
  }

  setFinalCeiling(threadId: string, maxTokens: number): void {
    this.ceilings.set(threadId, maxTokens);
    // Bounded: the oldest finished threads' ceilings go first (a Map iterates in insertion order).
    if (this.ceilings.size > MAX_FINAL_CEILINGS) this.ceilings.delete(this.ceilings.keys().next().value!);
  }
}
