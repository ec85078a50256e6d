import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { ReloadResult } from '../events/types.js';
import type { LoadedOrganism } from '../config/types.js';
import type { ReloadOptions, ReloadOutcome } from '../service/reloader.js';
import type { Logger } from '../util/logger.js';

/** Changes this close together are one reload (an editor's save is several events). */
export const WATCH_DEBOUNCE_MS = 200;
/** A new handler module written beside organism.yaml may be what a broken edit was waiting for. */
const MODULE_EXTENSIONS = new Set(['.ts', '.js', '.mts', '.mjs', '.cts', '.cjs']);

export interface ConfigWatcherOptions {
  /** organism.yaml. */
  readonly configPath: string;
  /** The files the running configuration was read from (LoadedOrganism.sources). */
  readonly sources: readonly string[];
  /** The reload of POST /organism/reload (FastifyInstance.reloadOrganism). */
  readonly reload: (options: ReloadOptions) => Promise<ReloadOutcome>;
  readonly logger: Logger;
  readonly debounceMs?: number;
  /** After each reload that loaded (applied or not): e.g. rewriting organism-env.d.ts. */
  readonly onLoaded?: (loaded: LoadedOrganism) => void;
}

/**
 * `serve --watch`: reloads when organism.yaml or a file its handler modules were loaded from
 * changes, through the same path as POST /organism/reload. Directories are watched, not files:
 * editors save by writing a new file and renaming it over the old one, which a watch on the
 * file itself would lose. Changes within the debounce window are one reload; a file saved
 * unchanged reloads nothing. An edit that does not load is logged once, with every problem,
 * and the running configuration is kept; the next edit is tried afresh.
 */
export class ConfigWatcher {
  private readonly configPath: string;
  private readonly debounceMs: number;
  private readonly watchers = new Map<string, FSWatcher>();
  private files = new Set<string>();
  private readonly changed = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private closed = false;
  /** The text of the last failure logged: the same failure again is not logged again. */
  private lastFailure: string | null = null;

  constructor(private readonly options: ConfigWatcherOptions) {
    this.configPath = path.resolve(options.configPath);
    this.debounceMs = options.debounceMs ?? WATCH_DEBOUNCE_MS;
    this.follow(options.sources);
  }

  /** The files watched now (organism.yaml first). */
  watched(): string[] {
    return [...this.files];
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Watches the directories of `sources` (and of organism.yaml), and only those. */
  private follow(sources: readonly string[]): void {
    this.files = new Set([this.configPath, ...sources.map((f) => path.resolve(f))]);
    const dirs = new Set([...this.files].map((f) => path.dirname(f)));
    for (const [dir, w] of this.watchers) {
      if (dirs.has(dir)) continue;
      w.close();
      this.watchers.delete(dir);
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => this.heard(dir, name === null ? null : String(name)));
        w.on('error', (err) => {
          this.options.logger.warn({ err, dir }, `no longer watching ${dir} for changes`);
          w.close();
          this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
      } catch (err) {
        this.options.logger.warn({ err, dir }, `cannot watch ${dir} for changes; edits there need POST /organism/reload`);
      }
    }
  }

  private heard(dir: string, name: string | null): void {
    if (this.closed) return;
    const file = name === null ? null : path.join(dir, name);
    // Declaration files are never handler modules (and organism-env.d.ts is written on reload).
    const relevant = file === null || this.files.has(file) || (dir === path.dirname(this.configPath) && MODULE_EXTENSIONS.has(path.extname(file)) && !file.endsWith('.d.ts'));
    if (!relevant) return;
    if (file) this.changed.add(file);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.reload();
    }, this.debounceMs);
  }

  private async reload(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    const files = [...this.changed].map((f) => path.relative(path.dirname(this.configPath), f) || f);
    this.changed.clear();
    const { logger } = this.options;
    try {
      const outcome = await this.options.reload({ whenChanged: true });
      if (this.closed) return;
      this.follow(outcome.loaded.sources ?? []);
      this.options.onLoaded?.(outcome.loaded);
      const recovered = this.lastFailure !== null;
      this.lastFailure = null;
      if (outcome.applied) {
        logger.info({ files, ...diffFields(outcome.result) }, `watch: ${files.join(', ') || 'a watched file'} changed; reloaded: ${describeChanges(outcome.result)}`);
      } else if (recovered) {
        logger.info({ files }, 'watch: the configuration loads again and is the one running; nothing to reload');
      } else {
        logger.debug({ files }, 'watch: saved without a change that matters; nothing to reload');
      }
    } catch (err) {
      const problems = problemTexts(err);
      const text = problems.join('\n');
      if (text === this.lastFailure) {
        logger.debug({ files }, 'watch: still the same problems; still running the previous configuration');
      } else {
        this.lastFailure = text;
        logger.error({ files, problems }, `watch: ${files.join(', ') || 'a watched file'} changed but does not load; still running the previous configuration:\n  ${problems.join('\n  ')}`);
      }
    } finally {
      this.running = false;
      if (this.again && !this.closed) {
        this.again = false;
        void this.reload();
      }
    }
  }
}

/** The fields of a reload result a log line carries. */
function diffFields(r: ReloadResult): Record<string, unknown> {
  return { added: r.added, removed: r.removed, updated: r.updated, updatedFields: r.updatedFields, changed: r.changed, restartRequired: r.restartRequired };
}

/** `writer (prompt, model); added: critic; max_hops` in the order listeners, other keys. */
export function describeChanges(r: ReloadResult): string {
  const parts = [
    ...r.added.map((n) => `added ${n}`),
    ...r.removed.map((n) => `removed ${n}`),
    ...r.updated.map((n) => `${n} (${(r.updatedFields[n] ?? []).join(', ')})`),
    ...r.changed.map((k) => (r.restartRequired.includes(k) ? `${k} (at the next restart)` : k)),
  ];
  return parts.length > 0 ? parts.join('; ') : 'nothing changed';
}

/** Every problem of a failed reload (RELOAD_INVALID lists them, file:line:column), else its message. */
function problemTexts(err: unknown): string[] {
  const data = (err as { data?: unknown } | null)?.data;
  if (Array.isArray(data)) {
    const messages = data.map((p) => (p as { message?: unknown }).message).filter((m): m is string => typeof m === 'string');
    if (messages.length > 0) return messages;
  }
  return [err instanceof Error ? err.message : String(err)];
}
