import { Errors } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';

/**
 * Journal writes failing in a row (a full disk fails every one): one warning when they start
 * failing and one line when a write succeeds again, with how many failed meanwhile. The
 * storage reports the fault itself (at error level, once); a line per failed write here
 * would bury it. A database that cannot be reached is the storage's outage, told by its watch
 * once when it goes and once when it is back: these lines drop to debug then.
 */
export class JournalTrouble {
  private failures = 0;
  private outage = false;

  constructor(private readonly logger: Logger) {}

  failed(err: unknown): void {
    if (this.failures++ > 0) return;
    this.outage = Errors.STORAGE_UNAVAILABLE.is(err);
    this.logger[this.outage ? 'debug' : 'warn']({ err }, 'journal writes fail: deliveries wait to be booked and are retried until they commit');
  }

  succeeded(): void {
    if (this.failures === 0) return;
    this.logger[this.outage ? 'debug' : 'warn']({ failedWrites: this.failures }, `journal writes succeed again after ${this.failures} failed`);
    this.failures = 0;
  }
}
