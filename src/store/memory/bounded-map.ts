/**
 * The entries of an in-memory store, bounded to `max`: past it, the entries that finished
 * longest ago go first, and unfinished ones never. Finished entries wait in a queue in the
 * order they finished; eviction takes from its head and skips entries that changed since.
 * O(1) amortized per write: scanning the Map from its start on every write (as before) was
 * quadratic in practice, since a Map keeps deleted slots until it is rehashed.
 */
export class BoundedMap<V extends object> {
  readonly entries = new Map<string, V>();
  private queue: Array<{ id: string; value: V }> = [];
  private head = 0;

  constructor(
    private readonly max: number,
    private readonly isFinished: (value: V) => boolean,
    private readonly onEvict: (value: V) => void = () => {},
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(id: string): V | undefined {
    return this.entries.get(id);
  }

  /** Adds or replaces an entry; a finished one joins the eviction queue. */
  set(id: string, value: V): void {
    this.entries.set(id, value);
    if (this.isFinished(value)) this.finished(id, value);
    else this.trim();
  }

  /** Tells the map that an entry changed in place has finished. */
  finished(id: string, value: V): void {
    this.queue.push({ id, value });
    this.trim();
    // Entries that changed since they were queued stay in the queue until met; keep it bounded.
    if (this.queue.length - this.head > 2 * this.max + 1_000) this.compact();
  }

  private trim(): void {
    while (this.entries.size > this.max && this.head < this.queue.length) {
      const { id, value } = this.queue[this.head++]!;
      if (this.entries.get(id) === value && this.isFinished(value)) {
        this.entries.delete(id);
        this.onEvict(value);
      }
    }
    if (this.head > 1_024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private compact(): void {
    const seen = new Set<V>();
    this.queue = this.queue.slice(this.head).filter(({ id, value }) => {
      if (this.entries.get(id) !== value || !this.isFinished(value) || seen.has(value)) return false;
      seen.add(value);
      return true;
    });
    this.head = 0;
  }
}
