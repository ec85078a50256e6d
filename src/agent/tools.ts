import type { McpTool } from '../mcp/hub.js';
import { peerToolName, REPLY_TOOL, toolName } from '../llm/tool-names.js';
import type { ToolSpec } from '../llm/types.js';
import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import { unionParameters } from '../payload/union.js';
import { BUDGET_WARNING_TYPE, SYSTEM_ERROR_TYPE } from '../core/message.js';
import type { CodeTool } from './code-tool.js';
import type { PeerCard } from './prompt.js';

/** What a tool name stands for. */
export type ToolTarget =
  | { readonly kind: 'peer'; readonly peer: PeerCard }
  | { readonly kind: 'reply'; readonly types: readonly PayloadType[] | null }
  | { readonly kind: 'code'; readonly tool: CodeTool; readonly type: PayloadType }
  | { readonly kind: 'mcp'; readonly tool: McpTool };

export interface AgentTools {
  readonly specs: readonly ToolSpec[];
  resolve(name: string): ToolTarget | null;
}

/** A payload type's JSON Schema as tool parameters (the `$schema` keyword is left out: providers do not want it). */
function parametersOf(type: PayloadType): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = type.jsonSchema();
  return schema;
}

/**
 * The parameters of a tool that sends one payload: the type's own schema, or for a target of
 * several types `{"<Type>": {...}}` with one key (payload/union.ts says why not a top-level oneOf).
 */
function sendParameters(types: readonly PayloadType[]): Record<string, unknown> {
  const [only] = types;
  return types.length === 1 && only ? parametersOf(only) : unionParameters(types);
}

/** What a send tool's arguments are: `one Ticket payload (...)`, or one of several types under its name. */
function argumentsText(types: readonly PayloadType[]): string {
  const [only] = types;
  if (types.length === 1 && only) return `one ${only.name} payload${only.description ? ` (${only.description})` : ''}`;
  const each = types.map((t) => `${t.name}${t.description ? ` (${t.description})` : ''}`).join(', ');
  return `one payload of one of these types, under its type's name ({"${types[0]?.name}": {...}}): ${each}`;
}

/**
 * The tools of one delivery: one `send_to_<peer>` per declared peer (and nothing for any other
 * listener: peer isolation is the tool list), `reply` to the current sender, the agent's code
 * tools (`tools:`, by their names), then the tools of its MCP servers (`<server>_<tool>`). A name
 * that would repeat an earlier one is dropped (the config refuses code tools that would).
 */
export function buildTools(input: {
  peers: readonly PeerCard[];
  sender: string;
  replyTypes: readonly PayloadType[] | null;
  registry: PayloadRegistry;
  code?: readonly { readonly tool: CodeTool; readonly type: PayloadType }[];
  mcp: readonly McpTool[];
}): AgentTools {
  const specs: ToolSpec[] = [];
  const targets = new Map<string, ToolTarget>();
  const add = (spec: ToolSpec, target: ToolTarget) => {
    if (targets.has(spec.name)) return;
    targets.set(spec.name, target);
    specs.push(spec);
  };
  for (const peer of input.peers) {
    add(
      {
        name: peerToolName(peer.name),
        description: `Send a message to ${peer.name}: ${peer.description || 'no description'}. The arguments are ${argumentsText(peer.types)}.`,
        parameters: sendParameters(peer.types),
      },
      { kind: 'peer', peer },
    );
  }
  add(replySpec(input.sender, input.replyTypes, input.registry), { kind: 'reply', types: input.replyTypes });
  for (const { tool, type } of input.code ?? []) {
    add({ name: tool.name, description: tool.description, parameters: parametersOf(type) }, { kind: 'code', tool, type });
  }
  for (const tool of input.mcp) {
    add({ name: toolName(`${tool.server}_${tool.name}`), description: tool.description || `${tool.name} (MCP server ${tool.server})`, parameters: tool.inputSchema }, { kind: 'mcp', tool });
  }
  return { specs, resolve: (name) => targets.get(name) ?? null };
}

function replySpec(sender: string, types: readonly PayloadType[] | null, registry: PayloadRegistry): ToolSpec {
  const [only] = types ?? [];
  if (types && types.length > 1) {
    return {
      name: REPLY_TOOL,
      description: `Reply to ${sender}, the sender of the message you are handling. The arguments are ${argumentsText(types)}.`,
      parameters: sendParameters(types),
    };
  }
  if (only) {
    return {
      name: REPLY_TOOL,
      description: `Reply to ${sender}, the sender of the message you are handling. The arguments are one ${only.name} payload.`,
      parameters: parametersOf(only),
    };
  }
  // The sender is outside the organism (e.g. `api`): it takes any payload type, named in the call.
  const names = registry.names().filter((n) => n !== SYSTEM_ERROR_TYPE && n !== BUDGET_WARNING_TYPE);
  return {
    name: REPLY_TOOL,
    description: `Reply to ${sender}, the sender of the message you are handling, with a payload of any type: name the type and give the payload.`,
    parameters: {
      type: 'object',
      properties: {
        payloadType: { type: 'string', ...(names.length > 0 ? { enum: names } : {}), description: 'The payload type' },
        payload: { type: 'object', description: 'The payload, as that type describes it' },
      },
      required: ['payloadType', 'payload'],
      additionalProperties: false,
    },
  };
}
