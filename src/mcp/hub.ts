import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';
import { VERSION } from '../version.js';
import { StderrTail } from './stderr-tail.js';

/** A tool of an MCP server, as the server describes it. */
export interface McpTool {
  readonly server: string;
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

/** What a tool call gave: its text (every text item joined), and whether the tool said it failed. */
export interface McpToolResult {
  readonly text: string;
  readonly isError: boolean;
}

/** What `organism check --probe` learns of one server: its tools, or why it could not be reached and what it wrote to stderr. */
export type McpProbe =
  | { readonly server: string; readonly ok: true; readonly tools: readonly string[] }
  | {
      readonly server: string;
      readonly ok: false;
      readonly reason: string;
      /** What was run (`command: ...`, stdio) or reached (`url: ...`, HTTP). */
      readonly target: string;
      /** The server's last stderr lines (stdio only), oldest first. */
      readonly stderr: readonly string[];
    };

interface Connection {
  readonly client: Client;
  readonly tools: readonly McpTool[];
  readonly openedAt: number;
  /** Set before the hub closes it itself: that close is no disconnect. */
  closing: boolean;
}

/** Per server, kept across its connections: the disconnect streak, when to try again, its stderr. */
interface ServerState {
  /** Disconnects and failed connections in a row (a connection that lived STABLE_MS ends a streak). */
  failures: number;
  /** No reconnection before this time (ms since the epoch). */
  retryAt: number;
  readonly stderr: StderrTail | null;
}

/** A connection that lived this long was healthy: its disconnect starts a new streak. */
export const STABLE_MS = 60_000;
export const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_CAP_MS = 30_000;

/** Wait before reconnecting after `failures` in a row: the first at once, then 1 s, 2 s, 4 s, ... up to 30 s. */
export function reconnectDelay(failures: number): number {
  return failures <= 1 ? 0 : Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** (failures - 2));
}

/**
 * The organism's MCP clients (official TypeScript SDK), one per server of `mcp_servers`:
 * stdio servers run as child processes (in the config file's directory), others are reached
 * over Streamable HTTP. A server is connected when an agent first needs it, and its tool list
 * is read once then (filtered by the server's `tools`). A server that goes away (a stdio server
 * that crashed or closed) is logged once, with the last lines it wrote to stderr, and connected
 * again at its next use; a failed connection likewise. Repeated failures back off
 * (reconnectDelay): a call meanwhile fails at once with MCP_UNAVAILABLE saying when.
 */
export class McpHub {
  private readonly connections = new Map<string, Promise<Connection>>();
  /** The open connection of each server, once made (to tell its disconnect from an older one's). */
  private readonly current = new Map<string, Connection>();
  private readonly states = new Map<string, ServerState>();
  private closed = false;

  constructor(
    private readonly servers: readonly McpServerConfig[],
    private readonly baseDir: string,
    private readonly logger: Logger,
  ) {}

  /** Tools of the named servers, in the order given. */
  async tools(serverNames: readonly string[]): Promise<McpTool[]> {
    const out: McpTool[] = [];
    for (const name of serverNames) out.push(...(await this.connect(name)).tools);
    return out;
  }

  /** Calls one tool, bounded by the server's timeout and cancelled (MCP `notifications/cancelled`) when `signal` aborts. */
  async call(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult> {
    const config = this.config(server);
    const { client } = await this.connect(server);
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: config.timeoutSeconds * 1000 });
      return { text: resultText(result.content), isError: result.isError === true };
    } catch (err) {
      if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
      throw Errors.MCP_TOOL_FAILED(tool, server, err instanceof Error ? err.message : String(err));
    }
  }

  /** Connects to one server now and lists its tools; a failure is returned with the server's last stderr lines, not thrown. */
  async probe(name: string): Promise<McpProbe> {
    const config = this.config(name);
    try {
      const { tools } = await this.connect(name);
      return { server: name, ok: true, tools: tools.map((t) => t.name) };
    } catch (err) {
      // A turn later: stderr the server wrote just before it exited may still be on its way.
      await new Promise((resolve) => setImmediate(resolve));
      const target = config.command ? `command: ${config.command.join(' ')}` : `url: ${config.url ?? ''}`;
      const reason = err instanceof Error ? err.message : String(err);
      return { server: name, ok: false, reason, target, stderr: this.states.get(name)?.stderr?.lines() ?? [] };
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const pending = [...this.connections.values()];
    this.connections.clear();
    this.current.clear();
    await Promise.all(
      pending.map((p) =>
        p
          .then((c) => {
            c.closing = true;
            return c.client.close();
          })
          .catch(() => {}),
      ),
    );
  }

  private config(name: string): McpServerConfig {
    const config = this.servers.find((s) => s.name === name);
    if (!config) throw Errors.MCP_UNAVAILABLE(name, 'not declared in mcp_servers');
    return config;
  }

  private connect(name: string): Promise<Connection> {
    if (this.closed) return Promise.reject(Errors.MCP_UNAVAILABLE(name, 'the organism is stopping'));
    let pending = this.connections.get(name);
    if (!pending) {
      const config = this.config(name);
      const state = this.stateOf(config);
      const wait = state.retryAt - Date.now();
      if (wait > 0) {
        return Promise.reject(Errors.MCP_UNAVAILABLE(name, `it failed ${state.failures} times in a row; the next reconnection is in ${Math.ceil(wait / 1000)} s`));
      }
      const opening = this.open(config, state);
      pending = opening;
      this.connections.set(name, opening);
      opening.catch((err: unknown) => {
        if (this.connections.get(name) === opening) this.connections.delete(name);
        if (!this.closed) this.failed(config, state, 'could not connect', err);
      });
    }
    return pending;
  }

  private stateOf(config: McpServerConfig): ServerState {
    let state = this.states.get(config.name);
    if (!state) {
      state = { failures: 0, retryAt: 0, stderr: config.command ? new StderrTail(config.name, this.logger) : null };
      this.states.set(config.name, state);
    }
    return state;
  }

  /** The server went away on its own: forget the connection, so the next use connects again. */
  private disconnected(config: McpServerConfig, state: ServerState, conn: Connection): void {
    if (this.closed || conn.closing) return;
    if (this.current.get(config.name) === conn) {
      this.current.delete(config.name);
      this.connections.delete(config.name);
    }
    if (Date.now() - conn.openedAt >= STABLE_MS) state.failures = 0;
    this.failed(config, state, 'disconnected', null);
  }

  /** Counts one failure in the streak, sets the next reconnection, and logs it once with the server's last stderr lines. */
  private failed(config: McpServerConfig, state: ServerState, what: string, err: unknown): void {
    state.failures++;
    const delayMs = reconnectDelay(state.failures);
    state.retryAt = Date.now() + delayMs;
    // Deferred a turn: stderr the server wrote just before it exited may still be on its way.
    setImmediate(() =>
      this.logger.warn(
        {
          mcpServer: config.name,
          failures: state.failures,
          reconnectInMs: delayMs,
          ...(err ? { reason: err instanceof Error ? err.message : String(err) } : {}),
          ...(state.stderr ? { stderrTail: state.stderr.lines() } : {}),
        },
        `MCP server ${what}; it is connected again at its next use`,
      ),
    );
  }

  private async open(config: McpServerConfig, state: ServerState): Promise<Connection> {
    // The SDK is loaded at the first connection: most organisms have no MCP server, and loading
    // it cost every worker start ~0.2 s of CPU.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'organism', version: VERSION });
    try {
      await client.connect(await this.transport(config, state), { timeout: config.timeoutSeconds * 1000 });
      const listed = await client.listTools(undefined, { timeout: config.timeoutSeconds * 1000 });
      const tools = listed.tools
        .filter((t) => config.tools === null || config.tools.includes(t.name))
        .map((t) => ({ server: config.name, name: t.name, description: t.description ?? '', inputSchema: t.inputSchema as Record<string, unknown> }));
      this.logger.info({ mcpServer: config.name, tools: tools.map((t) => t.name) }, 'MCP server connected');
      const conn: Connection = { client, tools, openedAt: Date.now(), closing: false };
      // Set here, not when the promise settles: a disconnect right after must find it.
      this.current.set(config.name, conn);
      client.onclose = () => this.disconnected(config, state, conn);
      return conn;
    } catch (err) {
      await client.close().catch(() => {});
      if (err instanceof OrganismError) throw err;
      throw Errors.MCP_UNAVAILABLE(config.name, err instanceof Error ? err.message : String(err));
    }
  }

  private async transport(config: McpServerConfig, state: ServerState): Promise<Transport> {
    if (config.command) {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const [command, ...args] = config.command;
      const transport = new StdioClientTransport({ command: command!, args, cwd: this.baseDir, stderr: 'pipe' });
      if (transport.stderr) state.stderr?.follow(transport.stderr);
      return transport;
    }
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(config.url!));
  }
}

/** MCP content items as text: text items as they are, others named by their type. */
function resultText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content.map((item: { type?: unknown; text?: unknown }) => (item.type === 'text' && typeof item.text === 'string' ? item.text : `[${String(item.type)} content]`)).join('\n');
}

/** The directory stdio servers run in: the config file's. */
export function mcpBaseDir(configPath: string | null): string {
  return configPath ? path.dirname(configPath) : process.cwd();
}
