import type { LoadedOrganism } from '../config/types.js';
import { configDifferences, fingerprint } from '../config/fingerprint.js';
import { Errors } from '../errors/catalogue.js';
import type { EventBus } from '../events/bus.js';
import type { OrganismEvent } from '../events/types.js';
import type { Pump } from '../pump/pump.js';
import { isSystemName } from '../core/message.js';
import type { OperatorStateStore } from '../core/storage.js';
import type { ThreadStore } from '../core/thread.js';
import type { Logger } from '../util/logger.js';
import { standaloneLink, type ClusterCommand, type ClusterLink, type StoredConfig } from '../cluster/link.js';

/** Backoff of a step another process announced while the database could not be reached (see follow). */
const FOLLOW_RETRY_MS = 250;
const FOLLOW_RETRY_MAX_MS = 5_000;

/** What following the other processes reads and changes in this one. */
export interface FollowedProcess {
  readonly pump: Pump;
  readonly bus: EventBus;
  readonly operator: OperatorStateStore;
  readonly threads: ThreadStore;
  readonly logger: Logger;
  /** The configuration this process runs, as the processes of a clustered organism compare it. */
  configIdentity(): StoredConfig;
  /** Swaps to a configuration another process stored (already checked to be the stored one). */
  reload(next: LoadedOrganism): void;
}

/**
 * This process's part in a clustered organism: its events go to the other processes, and the
 * pauses, kills and reloads they announce are applied here, one at a time and in order. Alone
 * in its process (memory, SQLite) the link is `standaloneLink()` and nothing is heard.
 */
export class Follower {
  /** The other processes of a clustered organism (alone: nobody). */
  private link: ClusterLink = standaloneLink();
  /** Re-reads this process's organism.yaml (a reload announced by another process). */
  private reloadSource: (() => Promise<LoadedOrganism>) | null = null;
  /** Applying what other processes announce, one at a time and in order. */
  private following: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(private readonly here: FollowedProcess) {}

  /** See Organism.joinCluster. */
  join(link: ClusterLink, options: { reloadConfig?: () => Promise<LoadedOrganism> } = {}): void {
    this.link = link;
    this.reloadSource = options.reloadConfig ?? null;
    this.here.bus.on((event) => {
      if (publishedEvent(event)) link.publishEvent(event);
    });
  }

  /** Starts hearing the other processes (before anything stored is read: nothing meanwhile is missed). */
  start(): Promise<void> {
    return this.link.start({
      event: (event, origin) => this.here.bus.relay(event, origin),
      command: (command) => this.follow(() => this.applyCommand(command)),
      resync: () => this.follow(() => this.resync()),
    });
  }

  /** Tells the other processes an operator's decision, once it is stored. */
  publishCommand(command: ClusterCommand): Promise<void> {
    return this.link.publishCommand(command);
  }

  /** Stores the configuration now running and tells the other processes to reload. */
  publishConfig(config: StoredConfig): Promise<void> {
    return this.link.publishConfig(config);
  }

  /** The process is stopping: a step the database cannot be reached for is no longer retried. */
  stop(): void {
    this.stopping = true;
  }

  /** Sends what is still queued to the other processes and stops hearing them. */
  async close(): Promise<void> {
    await this.link.close().catch((err: unknown) => this.here.logger.warn({ err }, 'closing the link to the other processes failed'));
  }

  /**
   * Applies what another process announced, after what came before it. Each step reads what is
   * stored and applies it, so one the database could not be reached for (an outage, told once
   * by the store) is tried again with backoff until it answers, rather than lost.
   */
  private follow(work: () => Promise<void>): void {
    this.following = this.following
      .then(async () => {
        for (let delay = FOLLOW_RETRY_MS; ; delay = Math.min(delay * 2, FOLLOW_RETRY_MAX_MS)) {
          try {
            return await work();
          } catch (err) {
            if (!Errors.STORAGE_UNAVAILABLE.is(err)) throw err;
            if (this.stopping) return;
          }
          await new Promise((resolve) => setTimeout(resolve, delay).unref());
        }
      })
      .catch((err: unknown) => this.here.logger.error({ err }, 'applying what another process announced failed'));
  }

  private async applyCommand(command: ClusterCommand): Promise<void> {
    switch (command.kind) {
      case 'kill':
        if (this.here.pump.killThreadHere(command.threadId)) this.here.logger.info({ threadId: command.threadId }, 'thread killed by another process; its work here aborted');
        return;
      case 'paused':
        return this.followPauses();
      case 'reload':
        return this.followReload();
    }
  }

  /** Notifications were lost while the link was down: everything they could have said, read from the store. */
  private async resync(): Promise<void> {
    await this.followPauses();
    const pump = this.here.pump;
    const ids = pump.liveThreadIds();
    if (ids.length > 0) {
      for (const [id, record] of await this.here.threads.getMany(ids)) if (record.status === 'killed') pump.killThreadHere(id);
    }
    await this.followReload();
  }

  /** Pauses and resumes this process's listeners to match the stored paused set. */
  private async followPauses(): Promise<void> {
    const { operator, pump } = this.here;
    await operator.refresh?.();
    const paused = new Set(operator.pausedAgents());
    for (const runtime of pump.listeners()) {
      if (isSystemName(runtime.name)) continue;
      if (paused.has(runtime.name) && !runtime.paused) pump.pauseListener(runtime.name);
      else if (!paused.has(runtime.name) && runtime.paused) pump.resumeListener(runtime.name);
    }
  }

  /**
   * The stored configuration changed: this process re-reads its own organism.yaml and swaps to
   * it when it is the stored one; otherwise it says what differs and keeps running the old one
   * (an operator deploys the file, then reloads again).
   */
  private async followReload(): Promise<void> {
    const logger = this.here.logger;
    const stored = await this.link.storedConfig();
    if (!stored || stored.hash === this.here.configIdentity().hash) return;
    if (!this.reloadSource) {
      logger.error('the organism was reloaded by another process, but this one cannot re-read its configuration; still running the previous one');
      return;
    }
    let next: LoadedOrganism;
    try {
      next = await this.reloadSource();
    } catch (err) {
      logger.error({ err }, "the organism was reloaded by another process, but this one's organism.yaml does not load; still running the previous configuration");
      return;
    }
    const mine = fingerprint(next.config);
    if (mine.hash !== stored.hash) {
      const difference = configDifferences(mine.text, stored.text).join('; ');
      logger.error({ difference }, `the organism was reloaded by another process, but this one's organism.yaml differs (${difference}); still running the previous configuration`);
      return;
    }
    this.here.reload(next);
    await this.link.running(mine);
  }
}

/**
 * Events other processes' live views show. A process's own status (starting, stopping) and its
 * reload report stay with it: a worker stopping is not the organism stopping. `worker` events
 * each watching process derives from the workers table itself.
 */
function publishedEvent(event: OrganismEvent): boolean {
  return event.type !== 'organism_status' && event.type !== 'reload' && event.type !== 'worker';
}
