import type { OrganismError } from '../../errors/catalogue.js';
import { Errors } from '../../errors/catalogue.js';
import type { Logger } from '../../util/logger.js';
import type { StorageProblem } from '../../core/storage.js';
import { freeBytes, LOW_SPACE_BYTES } from './disk-space.js';

/**
 * The storage's faults, each logged at error level once when it starts (not once per failed
 * write or read: a full disk fails every write, and a log line each would bury the one that
 * says why). Lost and corrupt stay until the process ends; full ends when a write commits
 * again or the file system has room again.
 */
export class StorageHealth {
  private lostError: OrganismError | null = null;
  private corruptError: OrganismError | null = null;
  private fullError: OrganismError | null = null;
  /** Writes refused for want of space since the disk filled (reported when it is writable again). */
  private refusedWrites = 0;
  /** Errors already counted: one failure may be reported by the writer and by its caller. */
  private readonly seen = new WeakSet<OrganismError>();

  constructor(
    private readonly dataDir: string,
    private readonly logger: Logger | undefined,
  ) {}

  /** Records what a storage error says about the data directory. */
  noted(error: OrganismError): void {
    if (this.seen.has(error)) return;
    this.seen.add(error);
    if (error.code === Errors.STORAGE_FULL.code) {
      this.refusedWrites++;
      if (this.fullError) return;
      this.fullError = error;
      this.logger?.error({ code: error.code, dataDir: this.dataDir }, error.detail);
    } else if (error.code === Errors.STORAGE_CORRUPT.code) {
      if (this.corruptError) return;
      this.corruptError = error;
      this.logger?.error({ code: error.code, dataDir: this.dataDir }, error.detail);
    } else if (error.code === Errors.STORAGE_FAILED.code || error.code === Errors.STORAGE_REJECTED.code) {
      this.logger?.error({ code: error.code, dataDir: this.dataDir }, error.detail);
    }
  }

  /** The database file or its lock was deleted or replaced (see watch.ts). */
  lost(error: OrganismError): void {
    if (this.lostError) return;
    this.lostError = error;
    this.logger?.error({ code: error.code, dataDir: this.dataDir }, error.detail);
  }

  get isLost(): boolean {
    return this.lostError !== null;
  }

  /** A write committed: a full disk has room again. */
  wrote(): void {
    if (this.fullError) this.recovered();
  }

  /** The worst problem now, or null. Asks the file system for room while the disk is full. */
  problem(): StorageProblem | null {
    if (this.lostError) return { status: 'unhealthy', error: this.lostError };
    if (this.corruptError) return { status: 'unhealthy', error: this.corruptError };
    if (this.fullError) {
      const free = freeBytes(this.dataDir);
      if (free !== null && free >= LOW_SPACE_BYTES) this.recovered();
      else return { status: 'degraded', error: this.fullError };
    }
    return null;
  }

  private recovered(): void {
    this.logger?.warn({ dataDir: this.dataDir, refusedWrites: this.refusedWrites }, `the disk holding ${this.dataDir} has room again; writes resume`);
    this.fullError = null;
    this.refusedWrites = 0;
  }
}
