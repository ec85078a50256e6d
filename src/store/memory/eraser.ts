import type { LlmCallStore, ThreadEraser } from '../../core/storage.js';
import type { Journal } from '../../core/journal.js';
import type { ThreadErasure } from '../../core/thread.js';

interface ErasableJournal {
  eraseThread?(threadId: string): number;
}
interface ErasableCalls {
  eraseThread?(threadId: string): { calls: number; tools: number };
}

/**
 * Erasure on the memory stores (the default a store without its own gets): the journal's and
 * the call store's entries of the thread become tombstones, when they can (a store given by the
 * developer that cannot keeps its text, and the erasure says it erased none of it).
 */
export class MemoryEraser implements ThreadEraser {
  private readonly done = new Map<string, ThreadErasure>();

  constructor(
    private readonly journal: Journal,
    private readonly calls: LlmCallStore,
  ) {}

  async erase(threadId: string, by: string, at: number): Promise<ThreadErasure> {
    const messages = (this.journal as ErasableJournal).eraseThread?.(threadId) ?? 0;
    const calls = (this.calls as ErasableCalls).eraseThread?.(threadId) ?? { calls: 0, tools: 0 };
    const erasure: ThreadErasure = { threadId, by, at, messages, llmCalls: calls.calls, toolCalls: calls.tools, events: 0 };
    this.done.set(threadId, erasure);
    return erasure;
  }

  async erasureOf(threadId: string): Promise<ThreadErasure | null> {
    return this.done.get(threadId) ?? null;
  }
}
