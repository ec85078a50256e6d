import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ListenerConfig } from '../../config/types.js';
import { newId } from '../../util/ids.js';
import { OrganismError } from '../../errors/catalogue.js';
import { unionParameters } from '../../payload/union.js';
import type { ServiceOrganism as Organism } from '../service-organism.js';
import { listenerTypes, textField } from './a2a.js';
import { followThread } from './follow.js';

/** How long a tool call waits for the agent's reply before it answers with the thread id to follow. */
export const MCP_CALL_WAIT_MS = 5 * 60_000;

/** Listeners listed as MCP tools (`expose.mcp`), in the order of organism.yaml. */
export function mcpListeners(organism: Organism): ListenerConfig[] {
  return organism.config.listeners.filter((l) => l.expose?.mcp === true);
}

/** A tool's input schema: the payload's JSON Schema (several types: one key naming the type, as an inject). */
function inputSchema(organism: Organism, listener: ListenerConfig): { type: 'object'; [key: string]: unknown } {
  const types = listenerTypes(organism, listener);
  if (types.length === 1 && types[0]) {
    const { $schema: _ignored, ...schema } = types[0].jsonSchema();
    return { ...schema, type: 'object' };
  }
  return { ...unionParameters(types), type: 'object' };
}

function failure(text: string, threadId?: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }], ...(threadId ? { _meta: { threadId } } : {}) };
}

/**
 * One MCP server (the official SDK's, server side) over the organism: its tools are the exposed
 * listeners; a call injects its arguments into a new thread and waits (bounded) for the
 * listener's reply to `api`, telling progress (each message of the thread) meanwhile.
 */
export function mcpServer(organism: Organism, version: string, waitMs = MCP_CALL_WAIT_MS): Server {
  const server = new Server({ name: organism.name, version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: mcpListeners(organism).map((l) => ({
      name: l.name,
      description: l.description || `The ${l.name} listener of the ${organism.name} organism`,
      inputSchema: inputSchema(organism, l),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const listener = mcpListeners(organism).find((l) => l.name === request.params.name);
    if (!listener)
      return failure(
        `unknown tool ${request.params.name}: the tools are ${
          mcpListeners(organism)
            .map((l) => l.name)
            .join(', ') || '(none)'
        }`,
      );
    const threadId = newId();
    const progressToken = request.params._meta?.progressToken;
    let progress = 0;
    let settle: (result: CallToolResult) => void = () => {};
    const done = new Promise<CallToolResult>((resolve) => {
      settle = resolve;
    });
    const stop = followThread(organism, threadId, (u) => {
      if (u.kind === 'reply') {
        const type = organism.registry.get(u.message.payloadType);
        const field = type ? textField(type) : null;
        const text = field && typeof u.message.payload[field] === 'string' ? (u.message.payload[field] as string) : JSON.stringify(u.message.payload);
        settle({
          content: [{ type: 'text', text }],
          structuredContent: { payloadType: u.message.payloadType, payload: u.message.payload, threadId },
          _meta: { threadId },
        });
      } else if (u.kind === 'end') {
        settle(
          u.status === 'completed'
            ? failure(`${listener.name} finished without a reply (thread ${threadId})`, threadId)
            : failure(`thread ${threadId} ${u.status === 'killed' ? 'was killed' : `failed: ${u.error ?? 'error'}`}`, threadId),
        );
      } else if (u.kind === 'message' && progressToken !== undefined) {
        progress++;
        void extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message: `${u.message.from} -> ${u.message.to}: ${u.message.payloadType}` } })
          .catch(() => {});
      }
    });
    const timer = setTimeout(() => settle(failure(`no reply from ${listener.name} within ${Math.round(waitMs / 1000)} s; the thread ${threadId} goes on`, threadId)), waitMs);
    const onAbort = () => settle(failure(`call canceled; the thread ${threadId} goes on`, threadId));
    extra.signal.addEventListener('abort', onAbort, { once: true });
    try {
      await organism.inject(listener.name, request.params.arguments ?? {}, { threadId, waitMs: 1_000 });
      return await done;
    } catch (err) {
      if (err instanceof OrganismError) return failure(`${err.code}: ${err.detail}`);
      throw err;
    } finally {
      clearTimeout(timer);
      extra.signal.removeEventListener('abort', onAbort);
      stop();
    }
  });
  return server;
}
