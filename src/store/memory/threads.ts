import type { Page, ThreadQuery, ThreadRecord, ThreadStore } from '../types.js';

/** Thread records in memory, bounded: the least recently active finished threads go first. */
export class MemoryThreadStore implements ThreadStore {
  private readonly threads = new Map<string, ThreadRecord>();

  constructor(private readonly maxThreads = 50_000) {}

  put(thread: ThreadRecord): void {
    this.threads.delete(thread.id); // re-insert: Map order = least recently written first
    this.threads.set(thread.id, thread);
    if (this.threads.size > this.maxThreads) {
      for (const [id, t] of this.threads) {
        if (this.threads.size <= this.maxThreads) break;
        if (t.status !== 'active') this.threads.delete(id);
      }
    }
  }

  async get(id: string): Promise<ThreadRecord | null> {
    return this.threads.get(id) ?? null;
  }

  async getMany(ids: readonly string[]): Promise<Map<string, ThreadRecord>> {
    const found = new Map<string, ThreadRecord>();
    for (const id of ids) {
      const t = this.threads.get(id);
      if (t) found.set(id, t);
    }
    return found;
  }

  async list(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    const matches = [...this.threads.values()]
      .filter((t) => (!q.status || t.status === q.status) && (!q.agent || t.participants.includes(q.agent)))
      .sort((a, b) => b.lastActivity - a.lastActivity || (a.id < b.id ? 1 : -1));
    return { items: matches.slice(q.offset, q.offset + q.limit), total: matches.length };
  }
}
