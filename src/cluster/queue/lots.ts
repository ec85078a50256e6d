import type { PgWriter, Tx } from '../../store/postgres/writer.js';

/** Writes a lot of items in the transaction given, set-based; a result per item, in order. */
export type WriteLot<I, R> = (tx: Tx, items: readonly I[]) => Promise<R[]>;

interface Queued<I, R> {
  readonly item: I;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/**
 * Writes that arrive while the writer is busy, committed as one lot: they go into one job of
 * the writer's next transaction, which writes them set-based (a fixed number of statements for
 * the lot, not a few each: every statement is a round trip and a socket write, and those are
 * what bound a process's deliveries per second on PostgreSQL). A lot that fails is tried again
 * item by item, so one bad item fails only itself.
 */
export class PgLots<I, R> {
  private queue: Array<Queued<I, R>> = [];

  constructor(
    private readonly writer: PgWriter,
    private readonly write: WriteLot<I, R>,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // The first of a lot queues the job; the job takes whatever has arrived when it runs.
      if (this.queue.length === 1) this.schedule();
    });
  }

  private schedule(): void {
    let taken: Array<Queued<I, R>> | null = null;
    let results: R[] = [];
    const take = () => (taken ??= this.queue.splice(0));
    this.writer
      .write(async (tx) => {
        // The writer may run this job twice (alone, after its batch failed): the same lot.
        results = await this.write(
          tx,
          take().map((q) => q.item),
        );
      })
      .then(
        () => take().forEach((q, i) => void q.resolve(results[i]!)),
        (err: unknown) => {
          const lot = take(); // also when the job never ran (no connection)
          if (lot.length === 1) return lot[0]!.reject(err);
          for (const q of lot) this.alone(q);
        },
      );
  }

  private alone(q: Queued<I, R>): void {
    let result: R | undefined;
    this.writer
      .write(async (tx) => {
        result = (await this.write(tx, [q.item]))[0]!;
      })
      .then(() => q.resolve(result!), q.reject);
  }
}
