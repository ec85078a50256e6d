import type { ReplyFormat } from '../config/types.js';
import type { Outgoing } from '../core/handler.js';
import { Errors } from '../errors/catalogue.js';
import { answerFromText, escapeXml, incomingMessage, latestToolResults } from '../llm/providers/scripted-reply.js';
import { estimatePromptTokens, estimateTokens } from '../llm/tokens.js';
import { peerToolName, REPLY_TOOL } from '../llm/tool-names.js';
import type { CallObserver, ChatMessage, CompletionRequest, LlmProvider, ProviderResponse, ToolCall, ToolSpec } from '../llm/types.js';
import type { PayloadRegistry } from '../payload/registry.js';

/** What a scripted reply function is asked: who asks, what it is handling, and what it is offered. */
export interface ScriptedRequest {
  /** The agent (listener) asking. */
  readonly agent: string;
  readonly threadId: string | null;
  readonly model: string;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  /** The tools offered: `send_to_<peer>`, `reply`, code and MCP tools (none in the `xml` format). */
  readonly tools: readonly ToolSpec[];
  /** `tools` when the request offers tools (the agent answers with tool calls), else `xml`. */
  readonly format: ReplyFormat;
  /** The sender of the message being handled (`api` for an inject). */
  readonly from: string | null;
  /** The payload type of the message being handled. */
  readonly payloadType: string | null;
  /** The payload being handled (in the `xml` format read by its payload type, so numbers are numbers). */
  readonly payload: Readonly<Record<string, unknown>>;
  /** The request's last turn (a user turn, or the result of a tool call). */
  readonly lastMessage: ChatMessage | null;
  /** The results of the tool calls the agent made in its previous answer (empty on a first call). */
  readonly toolResults: ReadonlyArray<{ readonly name: string; readonly content: string; readonly isError: boolean }>;
  /** Answers already given in this delivery: 0 for its first call, 1 after one round of tool calls (in the tools format a repair round counts too), ... */
  readonly round: number;
  /** Answers this agent gave in this thread before this one (earlier deliveries and rounds included). */
  readonly turn: number;
}

/** Tool calls as a model makes them: any name, `arguments` an object (sent as JSON) or a string sent verbatim. */
export interface ScriptedCalls {
  readonly text?: string;
  readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments?: unknown }>;
}

/**
 * One answer of the scripted model:
 * - a string written in the XML reply format (`<send to="billing"><Ticket>...</Ticket></send>`,
 *   `<reply>...</reply>`, `<done/>`); an agent answering with tools gets its envelopes as calls
 *   of its `send_to_<peer>` and `reply` tools, so one script drives both formats;
 * - messages made with `send(to, payload)` / `reply(payload)` from `organism` (one, or a list:
 *   an empty list sends nothing and ends the agent's branch), written in the agent's format;
 * - `{calls: [...]}` (see `toolCall`): tool calls exactly as given, for code and MCP tools or
 *   malformed calls (agents answering with tools only).
 */
export type ScriptedReply = string | Outgoing | readonly Outgoing[] | ScriptedCalls;

/**
 * What one agent answers: a reply (the same every time), a list of replies (the agent's N-th
 * answer in a thread is the N-th; the last repeats), or a function of the request (which may
 * throw, failing the call like a provider error).
 */
export type ScriptedAgent = ScriptedReply | readonly ScriptedReply[] | ((request: ScriptedRequest) => ScriptedReply | Promise<ScriptedReply>);

/** An LLM provider that answers from a script: what `createTestOrganism({ llm })` runs instead of the configured providers. */
export interface ScriptedLlm extends LlmProvider {
  /** Every request answered so far, oldest first. */
  readonly requests: readonly ScriptedRequest[];
}

/** Tool calls for a scripted answer: `toolCall('lookupOrder', {id: 7})`. */
export function toolCall(name: string, args: unknown = {}, text?: string): ScriptedCalls {
  return text === undefined ? { calls: [{ name, arguments: args }] } : { text, calls: [{ name, arguments: args }] };
}

/** What the scripted model knows of the organism it runs in: payload types and who accepts which (for XML replies). */
export interface ScriptTypes {
  readonly registry: () => PayloadRegistry;
  /** The payload types a listener accepts; null when it is no listener (`api`). */
  readonly acceptedTypes: (listener: string) => readonly string[] | null;
}

const bindings = new WeakMap<ScriptedLlm, { types: ScriptTypes | null }>();

/** Tells a scripted model the payload types of the organism it answers for (createTestOrganism does). */
export function bindScriptTypes(llm: LlmProvider, types: ScriptTypes): void {
  const binding = bindings.get(llm as ScriptedLlm);
  if (binding) binding.types = types;
}

/**
 * A scripted LLM, by agent name: `scripted({ triage: (req) => send(req.payload.text.includes('invoice') ? 'billing' : 'tech', ...) })`.
 * It serves every model; usage is estimated from the text (about four characters a token). An
 * agent that is not in the script fails its call with an error naming the scripted agents.
 */
export function scripted(agents: Readonly<Record<string, ScriptedAgent>>, options: { readonly name?: string } = {}): ScriptedLlm {
  const requests: ScriptedRequest[] = [];
  const answers = new Map<string, number>();
  const binding: { types: ScriptTypes | null } = { types: null };
  const llm: ScriptedLlm = {
    name: options.name ?? 'scripted',
    type: 'mock',
    priority: 0,
    maxRetries: 0,
    requests,
    serves: () => true,
    async complete(request: CompletionRequest, signal: AbortSignal, observer: CallObserver = {}): Promise<ProviderResponse> {
      observer.onRequest?.({ model: request.model, system: request.system, messages: [...request.messages], tools: [...(request.tools ?? [])], max_tokens: request.maxOutputTokens });
      if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
      const agent = request.agent ?? '';
      const key = `${request.threadId ?? ''}\0${agent}`;
      const turn = answers.get(key) ?? 0;
      answers.set(key, turn + 1);
      const view = scriptedRequest(request, turn, binding.types);
      requests.push(view);
      const script = agents[agent];
      if (script === undefined) throw Errors.TEST_SCRIPT_NO_AGENT(agent, Object.keys(agents).map(quoted).join(', ') || 'no agent');
      const reply = await pick(script, view);
      const answer = render(reply, view, binding.types);
      for (const piece of answer.content.match(/\S+\s*|\s+/g) ?? []) observer.onDelta?.(piece);
      const promptTokens = estimatePromptTokens(request);
      const written = answer.content + answer.toolCalls.map((c) => c.name + c.arguments).join('');
      const completionTokens = Math.min(estimateTokens(written), request.maxOutputTokens);
      const usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null };
      observer.onUsage?.(usage);
      return { ...answer, finishReason: answer.toolCalls.length > 0 ? 'tool_calls' : 'stop', model: request.model, usage };
    },
  };
  bindings.set(llm, binding);
  return llm;
}

async function pick(script: ScriptedAgent, request: ScriptedRequest): Promise<ScriptedReply> {
  if (typeof script === 'function') return script(request);
  if (isReplyList(script)) {
    if (script.length === 0) throw Errors.TEST_SCRIPT_EMPTY(request.agent);
    return script[Math.min(request.turn, script.length - 1)]!;
  }
  return script;
}

/** A list of replies, as opposed to one reply that is a list of messages (each item then an Outgoing). */
function isReplyList(script: ScriptedReply | readonly ScriptedReply[]): script is readonly ScriptedReply[] {
  return Array.isArray(script);
}

function scriptedRequest(request: CompletionRequest, turn: number, types: ScriptTypes | null): ScriptedRequest {
  const tools = request.tools ?? [];
  const incoming = incomingMessage(request.messages);
  let payload: Record<string, unknown> = incoming?.payload ?? {};
  // The XML format carries text: read it by its payload type when the organism knows it.
  if (incoming && tools.length === 0 && incoming.payloadType && types) {
    const read = types.registry().get(incoming.payloadType)?.fromXml(incoming.raw);
    if (read?.ok) payload = read.value;
  }
  const lastUser = findLastIndex(request.messages, (m) => m.role === 'user');
  return {
    agent: request.agent ?? '',
    threadId: request.threadId ?? null,
    model: request.model,
    system: request.system,
    messages: request.messages,
    tools,
    format: tools.length > 0 ? 'tools' : 'xml',
    from: incoming?.from ?? null,
    payloadType: incoming?.payloadType ?? null,
    payload,
    lastMessage: request.messages[request.messages.length - 1] ?? null,
    toolResults: latestToolResults(request.messages).map((m) => ({ name: m.name, content: m.content, isError: m.isError === true })),
    round: request.messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length,
    turn,
  };
}

function render(reply: ScriptedReply, request: ScriptedRequest, types: ScriptTypes | null): { content: string; toolCalls: ToolCall[] } {
  if (typeof reply === 'string') return answerFromText(reply, request.tools, 'call_scripted_');
  if (isCalls(reply)) {
    if (request.format === 'xml') throw Errors.TEST_SCRIPT_CALLS_IN_XML(request.agent);
    return {
      content: reply.text ?? '',
      toolCalls: reply.calls.map((c, i) => ({ id: `call_scripted_${i + 1}`, name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}) })),
    };
  }
  const messages: readonly Outgoing[] = isOutgoingList(reply) ? reply : [reply];
  if (request.format === 'tools') return { content: '', toolCalls: messages.map((m, i) => toolCallOf(m, i, request)) };
  return { content: messages.length === 0 ? '<done/>' : messages.map((m) => envelopeOf(m, request, types)).join('\n'), toolCalls: [] };
}

function isCalls(reply: ScriptedReply): reply is ScriptedCalls {
  return typeof reply === 'object' && reply !== null && !Array.isArray(reply) && 'calls' in reply;
}

function isOutgoingList(reply: Outgoing | readonly Outgoing[]): reply is readonly Outgoing[] {
  return Array.isArray(reply);
}

/** A message as the call of the tool that sends it, its arguments shaped as that tool's parameters ask. */
function toolCallOf(message: Outgoing, index: number, request: ScriptedRequest): ToolCall {
  const name = message.to === undefined ? REPLY_TOOL : peerToolName(message.to);
  const schema = request.tools.find((t) => t.name === name)?.parameters ?? {};
  const props = (schema['properties'] ?? {}) as Record<string, unknown>;
  let args: unknown = message.payload;
  if (props['payloadType'] && props['payload']) {
    // A reply to a sender outside the organism names its type.
    if (message.payloadType === undefined) throw Errors.TEST_SCRIPT_TYPE_NEEDED(request.agent, request.from ?? 'the sender', 'which accepts any type', "reply(payload, 'Type')");
    args = { payloadType: message.payloadType, payload: message.payload };
  } else if (schema['maxProperties'] === 1) {
    // A target of several types takes {"<Type>": {...}}.
    if (message.payloadType === undefined) throw Errors.TEST_SCRIPT_TYPE_NEEDED(request.agent, message.to ?? request.from ?? 'the sender', 'which accepts several types', howToName(message));
    args = { [message.payloadType]: message.payload };
  }
  return { id: `call_scripted_${index + 1}`, name, arguments: JSON.stringify(args) };
}

/** A message as the XML format writes it: `<send to="peer"><Type>...</Type></send>` or `<reply>...</reply>`. */
function envelopeOf(message: Outgoing, request: ScriptedRequest, types: ScriptTypes | null): string {
  const target = message.to ?? request.from;
  const accepted = target === null || types === null ? null : types.acceptedTypes(target);
  const typeName = message.payloadType ?? (accepted?.length === 1 ? accepted[0] : undefined);
  if (typeName === undefined) {
    const why = accepted && accepted.length > 1 ? 'which accepts several types' : 'whose payload type the script cannot tell';
    throw Errors.TEST_SCRIPT_TYPE_NEEDED(request.agent, target ?? 'the sender', why, howToName(message));
  }
  const type = types?.registry().get(typeName);
  const xml = type ? type.toXml(message.payload) : elementXml(typeName, message.payload);
  return message.to === undefined ? `<reply>${xml}</reply>` : `<send to="${escapeXml(message.to).replace(/"/g, '&quot;')}">${xml}</send>`;
}

/** A payload as elements, for a type the organism does not declare. */
function elementXml(name: string, value: unknown): string {
  if (Array.isArray(value)) return `<${name}>${value.map((v) => elementXml('item', v)).join('')}</${name}>`;
  if (value !== null && typeof value === 'object') {
    return `<${name}>${Object.entries(value)
      .map(([k, v]) => elementXml(k, v))
      .join('')}</${name}>`;
  }
  return `<${name}>${escapeXml(value === null || value === undefined ? '' : String(value))}</${name}>`;
}

function howToName(message: Outgoing): string {
  return message.to === undefined ? "reply(payload, 'Type')" : `send('${message.to}', payload, 'Type')`;
}

function quoted(name: string): string {
  return `"${name}"`;
}

function findLastIndex<T>(items: readonly T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i]!)) return i;
  return -1;
}
