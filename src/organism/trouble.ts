import { Errors } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';

/**
 * A background loop's failures (the scheduler's passes, the webhook sender's rounds), told once
 * until a round succeeds, not at every poll. An unreachable store is not told here: the store
 * logs its own outage, once.
 */
export class Trouble {
  private failing = false;

  constructor(
    private readonly logger: Logger,
    private readonly failed: string,
    private readonly recovered: string,
  ) {}

  /** A round succeeded. */
  ok(): void {
    if (this.failing) this.logger.info(this.recovered);
    this.failing = false;
  }

  /** A round failed with `err`. */
  fail(err: unknown): void {
    if (!this.failing && !Errors.STORAGE_UNAVAILABLE.is(err)) this.logger.error({ err }, this.failed);
    this.failing = true;
  }
}
