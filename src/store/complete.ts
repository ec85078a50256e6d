import type { OrganismStorage, StorageParts } from '../core/storage.js';
import { EmbeddedQueue } from '../queue/embedded.js';
import { MemoryBudgetArchive } from '../usage/budget-archive.js';
import { MemoryLlmCallStore } from './memory/llm-calls.js';
import { MemoryOperatorState } from './memory/operator-state.js';
import { MemoryEraser } from './memory/eraser.js';
import { MemoryScheduleStore } from './memory/schedules.js';
import { MemoryWebhookStore } from './memory/webhooks.js';

/**
 * `parts` with every member a store may leave out given its default: LLM calls, paused
 * agents, schedules and webhook deliveries in memory, budgets not saved (finished threads' in memory), the embedded budget
 * ledger, the embedded delivery queue, no storage problem, never lost, nothing to flush. The members are filled in on
 * `parts` itself, so the store keeps its identity (and whatever else it holds); a `close`
 * that answers synchronously is made to return a promise.
 */
export function completeStorage(parts: StorageParts): OrganismStorage {
  const s = parts as { -readonly [K in keyof OrganismStorage]?: OrganismStorage[K] };
  s.llmCalls ??= new MemoryLlmCallStore();
  s.budgets ??= { load: async () => [], save: async () => {}, archive: new MemoryBudgetArchive() };
  s.budgetLedger ??= null;
  s.operator ??= new MemoryOperatorState();
  s.eraser ??= new MemoryEraser(parts.journal, s.llmCalls);
  s.schedules ??= new MemoryScheduleStore();
  s.webhooks ??= new MemoryWebhookStore();
  s.problem ??= () => null;
  s.onLost ??= () => {};
  s.flush ??= async () => {};
  s.queue ??= new EmbeddedQueue(parts.journal, parts.threads);
  const close = parts.close;
  s.close = async function (this: unknown) {
    await close.call(this);
  };
  return s as OrganismStorage;
}
