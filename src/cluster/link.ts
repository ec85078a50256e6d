import type { OrganismEvent } from '../events/types.js';

/**
 * What the processes of one clustered organism (serve and worker processes on one PostgreSQL
 * database) tell each other. The runtime talks to this interface only; the PostgreSQL
 * implementation (LISTEN/NOTIFY) lives in src/cluster/bus (beside this file), and an organism alone in its
 * process (memory, SQLite) gets `standaloneLink()`, which does nothing.
 */

/** An operator's decision, already stored when it is sent; every other process applies it. */
export type ClusterCommand =
  /** A listener was paused or resumed: the stored paused set changed. */
  | { readonly kind: 'paused'; readonly agent: string; readonly paused: boolean }
  /** A thread was killed (stored as killed): abort its in-flight handlers here. */
  | { readonly kind: 'kill'; readonly threadId: string }
  /** The organism's configuration changed (stored as `configHash`): reload if ours matches. */
  | { readonly kind: 'reload'; readonly configHash: string };

/** The configuration the organism runs, as stored for every process to compare with its own. */
export interface StoredConfig {
  readonly hash: string;
  /** The canonical text the hash is of (differences are named from it). */
  readonly text: string;
}

/** What the link calls as it hears the other processes. */
export interface ClusterHandlers {
  /** An event another process emitted (each once, in that process's order). */
  event(event: OrganismEvent, origin: string): void;
  command(command: ClusterCommand, origin: string): void;
  /** The link was cut and is back: what was sent meanwhile is lost, re-read the stored state. */
  resync(): void;
}

export interface ClusterLink {
  /** This process, as the other processes know it (the origin of what it sends). */
  readonly origin: string;
  /** Starts hearing the other processes; resolves once it does. */
  start(handlers: ClusterHandlers): Promise<void>;
  /** Sends one of this process's events to the others; never blocks and never throws (live views are best effort). */
  publishEvent(event: OrganismEvent): void;
  /** Sends a command once everything this process wrote before it has committed. */
  publishCommand(command: ClusterCommand): Promise<void>;
  /** The configuration stored by the last boot or reload (null: none yet). */
  storedConfig(): Promise<StoredConfig | null>;
  /** Stores the configuration and sends `reload` to every other process (together: both or neither). */
  publishConfig(config: StoredConfig): Promise<void>;
  /** This process runs `config` now (it followed a reload): recorded where the processes are listed. */
  running(config: StoredConfig): Promise<void>;
  /** Sends what is still queued, then stops. */
  close(): Promise<void>;
}

/** An organism alone in its process: nobody to tell, nothing to hear. */
export function standaloneLink(origin = 'local'): ClusterLink {
  return {
    origin,
    start: async () => {},
    publishEvent: () => {},
    publishCommand: async () => {},
    storedConfig: async () => null,
    publishConfig: async () => {},
    running: async () => {},
    close: async () => {},
  };
}
