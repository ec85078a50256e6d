import type { ReloadSources, Reloader } from './reloader.js';
import type { ServiceOrganism } from './service-organism.js';

export type { ServiceOrganism } from './service-organism.js';

/** What every route group gets: the organism and the process-level hooks the CLI supplies (those a reload reads in ReloadSources). */
export interface ServiceContext extends ReloadSources {
  readonly version: string;
  /** Called after the stop response is sent (the CLI shuts the process down). */
  readonly onStop?: () => void;
  /** Called after the restart response is sent (the CLI drains and restarts). */
  readonly onRestart?: () => void;
  /** The one reload path (POST /organism/reload, `serve --watch`), one at a time. */
  readonly reloader: Reloader;
}

/** Seconds since the organism started (0 before it has). */
export function uptimeSeconds(organism: ServiceOrganism, now = Date.now()): number {
  const started = organism.startedAt;
  return started === null ? 0 : Math.max(0, Math.round((now - started) / 100) / 10);
}
