import type { Page } from '../../core/page.js';
import type { ThreadQuery, ThreadRecord, ThreadStore } from '../../core/thread.js';
import type { TextSearch } from '../../core/search.js';
import { BoundedMap } from './bounded-map.js';

/** Thread records in memory, bounded: the threads that finished longest ago go first. */
export class MemoryThreadStore implements ThreadStore {
  private readonly bounded: BoundedMap<ThreadRecord>;
  private readonly threads: Map<string, ThreadRecord>;

  constructor(
    maxThreads = 50_000,
    /** Which threads a text search matches (the journal's entries); without it, none. */
    private readonly textMatches: (search: TextSearch) => { ids: ReadonlySet<string>; truncated: boolean } = () => ({ ids: new Set(), truncated: false }),
  ) {
    this.bounded = new BoundedMap(maxThreads, (t) => t.status !== 'active' && t.status !== 'waiting');
    this.threads = this.bounded.entries;
  }

  put(thread: ThreadRecord): void {
    this.bounded.set(thread.id, thread);
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
    const found = q.text ? this.textMatches(q.text) : null;
    const matches = [...this.threads.values()]
      .filter(
        (t) =>
          (!q.status || t.status === q.status) &&
          (!q.agent || t.participants.includes(q.agent)) &&
          (q.startTime === undefined || t.lastActivity >= q.startTime) &&
          (q.endTime === undefined || t.createdAt < q.endTime) &&
          (!found || found.ids.has(t.id)),
      )
      .sort((a, b) => b.lastActivity - a.lastActivity || (a.id < b.id ? 1 : -1));
    return { items: matches.slice(q.offset, q.offset + q.limit), total: matches.length, ...(found ? { searchTruncated: found.truncated } : {}) };
  }
}
