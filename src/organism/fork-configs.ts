import { realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { ConfigInvalidError, formatConfigProblem } from '../config/index.js';
import { fingerprint } from '../config/fingerprint.js';
import { acceptedTypes } from '../config/accepted-types.js';
import type { LoadedOrganism, McpServerConfig } from '../config/types.js';
import type { Message } from '../core/message.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { ListenerSetup, ListenerSetups } from '../pump/setup.js';
import type { Logger } from '../util/logger.js';

/** Thread metadata of a fork run under another organism.yaml: its absolute path, and its fingerprint when the fork was made. */
export const FORK_CONFIG = 'organism.fork.config';
export const FORK_CONFIG_HASH = 'organism.fork.configHash';

/** Setups kept in memory (the least recently used is dropped, and loaded again if a delivery needs it). */
const MAX_SETUPS = 16;

export interface ForkConfigDeps {
  /** Reads and checks an organism.yaml as a reload does (handler modules loaded, provider keys set). */
  load(path: string): Promise<LoadedOrganism>;
  /** Its listeners, payload types, LLM router and guardrails, as deliveries run them. */
  build(loaded: LoadedOrganism): ListenerSetup;
  readonly logger: Logger;
}

/** A fork's organism.yaml, read and built. */
export interface ForkConfig {
  readonly path: string;
  readonly hash: string;
  readonly loaded: LoadedOrganism;
}

/**
 * The organism.yaml files forks run under (`configPath`, issue 29). A fork's messages name the
 * file in their metadata; the first delivery that needs it in a process loads it (after a
 * restart, or on another worker of a cluster: from the same path) and keeps it. A file that
 * changed since the fork was made is run as it is now, with a warning.
 */
export class ForkConfigs implements ListenerSetups {
  private readonly setups = new Map<string, Promise<ListenerSetup>>();
  private readonly warned = new Set<string>();

  constructor(private readonly deps: ForkConfigDeps) {}

  of(message: Message): Promise<ListenerSetup> | null {
    const path = message.metadata[FORK_CONFIG];
    if (path === undefined) return null;
    const hash = message.metadata[FORK_CONFIG_HASH] ?? '';
    const key = `${path}\u0000${hash}`;
    let setup = this.setups.get(key);
    if (setup) {
      // Most recently used last.
      this.setups.delete(key);
    } else {
      setup = this.loadAgain(path, hash);
      setup.catch(() => this.setups.delete(key));
    }
    this.keep(key, setup);
    return setup;
  }

  /**
   * Reads a fork's organism.yaml afresh (when the fork is made): checked as a reload checks it,
   * then built and kept for the fork's deliveries. `within`: the directory it must lie in.
   */
  async prepare(configPath: string, within: string | null): Promise<ForkConfig> {
    const path = await this.resolve(configPath, within);
    const loaded = await this.read(path, configPath);
    const hash = fingerprint(loaded.config).hash;
    this.keep(`${path}\u0000${hash}`, Promise.resolve(this.deps.build(loaded)));
    return { path, hash, loaded };
  }

  private async loadAgain(path: string, hash: string): Promise<ListenerSetup> {
    const loaded = await this.read(path, path);
    const now = fingerprint(loaded.config).hash;
    if (hash !== '' && now !== hash && !this.warned.has(path)) {
      this.warned.add(path);
      this.deps.logger.warn({ path, forkedUnder: hash, now }, 'the organism.yaml a fork runs under changed since the fork was made: its deliveries run the file as it is now');
    }
    return this.deps.build(loaded);
  }

  /** The file loaded and checked; what is wrong with it, as FORK_CONFIG_INVALID naming it as `named`. */
  private async read(path: string, named: string): Promise<LoadedOrganism> {
    try {
      return await this.deps.load(path);
    } catch (err) {
      throw invalid(named, err);
    }
  }

  private keep(key: string, setup: Promise<ListenerSetup>): void {
    this.setups.set(key, setup);
    if (this.setups.size > MAX_SETUPS) this.setups.delete(this.setups.keys().next().value as string);
  }

  /** The absolute, symlink-free path of configPath (relative: to `within`), which must lie in `within`. */
  private async resolve(configPath: string, within: string | null): Promise<string> {
    const base = within ?? process.cwd();
    let path: string;
    try {
      path = await realpath(isAbsolute(configPath) ? configPath : resolve(base, configPath));
    } catch (err) {
      throw Errors.FORK_CONFIG_INVALID(configPath, err instanceof Error && 'code' in err && err.code === 'ENOENT' ? 'no such file' : errorText(err));
    }
    if (within !== null) {
      const root = await realpath(within);
      const rel = relative(root, path);
      if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) throw Errors.FORK_CONFIG_OUTSIDE(configPath, root);
    }
    return path;
  }
}

/**
 * Why a fork cannot run under an organism.yaml, as a list (empty: it can). The fork's messages
 * wait on the running organism's queues, by listener name, so the file may change and remove
 * listeners but not add any; its MCP servers are the running organism's connections, so those
 * it names must be the running ones; the message the fork runs on from must reach a listener
 * that takes its type.
 */
export function forkConfigProblems(
  loaded: LoadedOrganism,
  running: { readonly listeners: readonly string[]; readonly mcpServers: readonly McpServerConfig[] },
  at: Pick<Message, 'to' | 'payloadType'>,
): string[] {
  const problems: string[] = [];
  const names = new Set(running.listeners);
  const added = loaded.listeners.map((l) => l.config.name).filter((n) => !names.has(n));
  if (added.length > 0) {
    problems.push(
      `it adds listener${added.length === 1 ? '' : 's'} ${added.join(', ')}, which the running organism does not have (a fork's messages wait on the running organism's queues): reload to add ${added.length === 1 ? 'it' : 'them'} first, or leave ${added.length === 1 ? 'it' : 'them'} out`,
    );
  }
  const target = loaded.listeners.find((l) => l.config.name === at.to);
  if (!target) problems.push(`it has no listener ${at.to}, which the fork runs on from (a ${at.payloadType})`);
  else if (!acceptedTypes(target.config).includes(at.payloadType)) problems.push(`its listener ${at.to} does not accept ${at.payloadType}, the message the fork runs on from`);
  const mine = new Map(running.mcpServers.map((m) => [m.name, JSON.stringify(m)]));
  for (const server of loaded.config.mcpServers ?? []) {
    const theirs = mine.get(server.name);
    if (theirs === undefined) problems.push(`mcp_servers ${server.name} is not a server of the running organism (a fork uses the running organism's MCP connections)`);
    else if (theirs !== JSON.stringify(server)) problems.push(`mcp_servers ${server.name} differs from the running organism's (a fork uses the running organism's MCP connections)`);
  }
  return problems;
}

/** The directory a running organism's fork configurations must lie in: its organism.yaml's. */
export function forkConfigRoot(runningPath: string | null): string | null {
  return runningPath === null ? null : dirname(resolve(runningPath));
}

function invalid(configPath: string, err: unknown): OrganismError {
  if (err instanceof ConfigInvalidError) {
    const problems = err.problems.map((p) => ({ location: 'config', field: p.keyPath, message: formatConfigProblem(p) }));
    return Errors.FORK_CONFIG_INVALID.withData(problems, configPath, err.problems.map(formatConfigProblem).join('; '));
  }
  if (err instanceof OrganismError && Errors.FORK_CONFIG_INVALID.is(err)) return err;
  return Errors.FORK_CONFIG_INVALID(configPath, errorText(err));
}

function errorText(err: unknown): string {
  if (err instanceof OrganismError) return err.detail;
  return err instanceof Error ? err.message : String(err);
}
