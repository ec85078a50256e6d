import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';
import { VERSION } from '../version.js';

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

interface Connection {
  readonly client: Client;
  readonly tools: readonly McpTool[];
}

/**
 * The organism's MCP clients (official TypeScript SDK), one per server of `mcp_servers`:
 * stdio servers run as child processes (in the config file's directory), others are reached
 * over Streamable HTTP. A server is connected when an agent first needs it, and its tool list
 * is read once then (filtered by the server's `tools`). A failed connection is tried again at
 * the next need.
 */
export class McpHub {
  private readonly connections = new Map<string, Promise<Connection>>();
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

  async close(): Promise<void> {
    this.closed = true;
    const pending = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(pending.map((p) => p.then((c) => c.client.close()).catch(() => {})));
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
      pending = this.open(this.config(name));
      this.connections.set(name, pending);
      pending.catch(() => this.connections.delete(name));
    }
    return pending;
  }

  private async open(config: McpServerConfig): Promise<Connection> {
    // The SDK is loaded at the first connection: most organisms have no MCP server, and loading
    // it cost every worker start ~0.2 s of CPU.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'organism', version: VERSION });
    try {
      await client.connect(await this.transport(config), { timeout: config.timeoutSeconds * 1000 });
      const listed = await client.listTools(undefined, { timeout: config.timeoutSeconds * 1000 });
      const tools = listed.tools
        .filter((t) => config.tools === null || config.tools.includes(t.name))
        .map((t) => ({ server: config.name, name: t.name, description: t.description ?? '', inputSchema: t.inputSchema as Record<string, unknown> }));
      this.logger.info({ mcpServer: config.name, tools: tools.map((t) => t.name) }, 'MCP server connected');
      return { client, tools };
    } catch (err) {
      await client.close().catch(() => {});
      if (err instanceof OrganismError) throw err;
      throw Errors.MCP_UNAVAILABLE(config.name, err instanceof Error ? err.message : String(err));
    }
  }

  private async transport(config: McpServerConfig): Promise<Transport> {
    if (config.command) {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const [command, ...args] = config.command;
      const transport = new StdioClientTransport({ command: command!, args, cwd: this.baseDir, stderr: 'pipe' });
      // Drained into the log (debug): an unread pipe would block a chatty server.
      transport.stderr?.on('data', (chunk: Buffer) => this.logger.debug({ mcpServer: config.name }, chunk.toString().trimEnd()));
      return transport;
    }
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(config.url!));
  }
}

/** MCP content items as text: text items as they are, others named by their type. */
function resultText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((item: { type?: unknown; text?: unknown }) => (item.type === 'text' && typeof item.text === 'string' ? item.text : `[${String(item.type)} content]`))
    .join('\n');
}

/** The directory stdio servers run in: the config file's. */
export function mcpBaseDir(configPath: string | null): string {
  return configPath ? path.dirname(configPath) : process.cwd();
}
