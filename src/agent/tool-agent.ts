import type { ListenerConfig } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import type { ChatMessage, ToolCall } from '../llm/types.js';
import type { McpTool } from '../mcp/hub.js';
import type { FieldError } from '../payload/types.js';
import type { HandlerContext, Outgoing } from '../core/handler.js';
import type { AgentWorldView } from './world-view.js';
import type { PeerCard } from './prompt.js';
import { buildToolSystemPrompt } from './tool-prompt.js';
import { toolTurns } from './tool-turns.js';
import { buildTools, type AgentTools, type ToolTarget } from './tools.js';
import { PayloadType, type PayloadRegistry } from '../payload/index.js';
import { unionMember } from '../payload/union.js';
import { Defaults } from '../config/schema.js';
import type { CodeTool } from './code-tool.js';
import { ApprovalNeeded, type ApprovalDecision, type ProposedCall } from '../core/approval.js';

const HISTORY_LIMIT = 40;

/** A round of tool calls: the model's answer, or the round a person approved (its calls as they run). */
interface Round {
  readonly toolCalls: readonly ToolCall[];
  readonly callId: string;
}

/** What became of one tool call: a message to send, the result of a tool that ran (MCP or code), or a refusal with its reasons. */
type Handled =
  | { readonly kind: 'send'; readonly outgoing: Outgoing; readonly result: ChatMessage }
  | { readonly kind: 'ran'; readonly result: ChatMessage }
  | { readonly kind: 'refused'; readonly errors: readonly string[]; readonly result: ChatMessage };

/**
 * A `builtin:llm` delivery in `tools` mode. The model calls `send_to_<peer>` / `reply` tools
 * (each call one outgoing message, several calls = several messages), its code tools and its
 * MCP tools (run here, their results sent back, at most `max_tool_rounds` rounds: no hop, no
 * new delivery); a plain answer ends the
 * delivery, as does an answer whose calls are all valid messages. Calls with invalid
 * arguments or unknown names get their errors back as tool results for one repair round; a
 * second invalid answer fails the delivery (the sender gets a SystemError).
 */
export async function runToolAgent(
  listener: ListenerConfig,
  payload: Record<string, unknown>,
  ctx: HandlerContext,
  view: AgentWorldView,
  peers: readonly PeerCard[],
  replyTypes: readonly PayloadType[] | null,
): Promise<Outgoing[]> {
  const mcpTools = listener.mcpServers && listener.mcpServers.length > 0 ? await view.mcpTools(listener.mcpServers) : [];
  const code = view.codeTools(listener.name).map((tool) => ({ tool, type: inputType(tool, view.registry) }));
  const tools = buildTools({ peers, sender: ctx.from, replyTypes, registry: view.registry, code, mcp: mcpTools });
  const system = buildToolSystemPrompt({ listener, peers, sender: ctx.from, replyTypes, hasOtherTools: mcpTools.length > 0 || code.length > 0 });
  const keyed = new Set(peers.filter((p) => p.types.length > 1).map((p) => p.name));
  const maxRounds = listener.maxToolRounds ?? Defaults.maxToolRounds;
  const maxCallsPerRound = listener.maxToolCallsPerRound ?? Defaults.maxToolCallsPerRound;
  const maxMessages = listener.maxMessagesPerReply ?? view.replyLimits.maxMessagesPerReply;
  const needsApproval = new Set(listener.approval ?? []);
  // A delivery that stopped for approval continues from what it persisted, once a person decided.
  const resumed = needsApproval.size > 0 ? await view.approval(ctx.messageId) : null;
  const decided = resumed?.decision ? { state: resumed, decision: resumed.decision } : null;
  const messages: ChatMessage[] = decided ? [...decided.state.conversation] : toolTurns(await ctx.history(HISTORY_LIMIT), ctx, payload, keyed);
  const outgoing: Outgoing[] = decided ? [...decided.state.outgoing] : [];
  let repairUsed = decided?.state.repairUsed ?? false;
  let repairing = false;
  let toolRounds = decided?.state.toolRounds ?? 0;
  let pendingDecision = decided;
  for (;;) {
    let answer: Round;
    if (pendingDecision) {
      // The round the person decided on: the model's proposal (its LLM call was recorded when made).
      const { state, decision } = pendingDecision;
      pendingDecision = null;
      const calls = state.proposedCalls.map((c) => ({ id: c.id, name: c.name, arguments: argumentsText(decision.arguments[c.id] ?? c.arguments) }));
      if (decision.kind === 'rejected') {
        // Refused: the model hears it, and answers again (within the delivery's rounds).
        for (const c of state.proposedCalls) messages.push(refusedByPerson(c, decision));
        continue;
      }
      answer = { toolCalls: calls, callId: state.llmCallId ?? '' };
      // The proposing assistant turn is in the conversation as proposed; the edit replaces its arguments.
      messages[messages.length - 1] = { role: 'assistant', content: lastContent(messages), toolCalls: calls };
    } else {
      const completion = await ctx.llm.complete({ system, messages, tools: tools.specs, repair: repairing });
      answer = completion;
      // The caps of the XML format hold here too, checked before any argument is parsed.
      const bytes = Buffer.byteLength(completion.content, 'utf8') + answer.toolCalls.reduce((n, c) => n + Buffer.byteLength(c.name + c.arguments, 'utf8'), 0);
      if (bytes > view.replyLimits.maxReplyBytes) throw Errors.LLM_REPLY_TOO_LARGE(listener.name, bytes, view.replyLimits.maxReplyBytes);
      if (answer.toolCalls.length === 0) return outgoing; // a plain answer: nothing (more) to send
      messages.push({ role: 'assistant', content: completion.content, toolCalls: answer.toolCalls });
      if (answer.toolCalls.some((c) => needsApproval.has(c.name))) {
        // Nothing of this round is sent or run: the delivery waits for a person (AWAITING).
        throw new ApprovalNeeded({
          conversation: messages,
          proposedCalls: answer.toolCalls.map((c) => proposed(c, tools, needsApproval)),
          outgoing,
          toolRounds,
          repairUsed,
          llmCallId: answer.callId,
        });
      }
    }
    const runsTools = answer.toolCalls.some((c) => runs(tools, c));
    if (runsTools && ++toolRounds > maxRounds) throw Errors.LLM_TOOL_ROUNDS_EXCEEDED(listener.name, maxRounds);
    const sends = answer.toolCalls.filter((c) => !runs(tools, c)).length;
    if (outgoing.length + sends > maxMessages) {
      // Refused whole, as in the XML format: the model is told and gets the repair round.
      const error = `the answer sends ${outgoing.length + sends} messages; at most ${maxMessages} are allowed in one reply`;
      for (const call of answer.toolCalls) messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: `Not sent: ${error}.`, isError: true });
      if (repairUsed) throw Errors.LLM_INVALID_REPLY(listener.name, error);
      repairUsed = true;
      repairing = true;
      continue;
    }
    // Tool calls (MCP and code) past the round's cap are not run: the model is told, and the turn goes on.
    let toolCalls = 0;
    const handled = await Promise.all(
      answer.toolCalls.map((call) => (runs(tools, call) && ++toolCalls > maxCallsPerRound ? notRun(call, maxCallsPerRound) : handle(call, tools, ctx, view, answer, listener))),
    );
    const errors: string[] = [];
    for (const h of handled) {
      messages.push(h.result);
      if (h.kind === 'send') outgoing.push(h.outgoing);
      if (h.kind === 'refused') errors.push(...h.errors);
    }
    if (errors.length > 0) {
      if (repairUsed) throw Errors.LLM_INVALID_REPLY(listener.name, errors.join('; '));
      repairUsed = true;
      repairing = true;
      continue;
    }
    repairing = false;
    if (!runsTools) return outgoing; // every call was a valid message: the answer is complete
  }
}

async function handle(call: ToolCall, tools: AgentTools, ctx: HandlerContext, view: AgentWorldView, answer: Round, listener: ListenerConfig): Promise<Handled> {
  const target = tools.resolve(call.name);
  if (!target) {
    const names = tools.specs.map((t) => t.name).join(', ');
    // Refused here and by the pump alike; saying so lets the model correct itself.
    return refused(call, [`${call.name}: not one of your tools (${names})`]);
  }
  const args = parseArguments(call);
  if (!args.ok) return refused(call, [args.error]);
  if (target.kind === 'mcp') return runMcp(call, target.tool, args.value, ctx, view, answer.callId, listener);
  if (target.kind === 'code') return runCode(call, target, args.value, ctx, view, answer.callId, listener);
  return message(call, target, args.value);
}

/** A proposed call as the inbox shows it: its arguments parsed, and its tool's parameters (for edits). */
function proposed(call: ToolCall, tools: AgentTools, needsApproval: ReadonlySet<string>): ProposedCall {
  const parsed = parseArguments(call);
  const parameters = tools.specs.find((s) => s.name === call.name)?.parameters ?? {};
  return { id: call.id, name: call.name, arguments: parsed.ok ? parsed.value : call.arguments, parameters, needsApproval: needsApproval.has(call.name) };
}

function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function lastContent(messages: readonly ChatMessage[]): string {
  const last = messages[messages.length - 1];
  return last && last.role === 'assistant' ? last.content : '';
}

/** A rejected round: each call's result says a person refused it (with the note), so the model may answer again. */
function refusedByPerson(call: ProposedCall, decision: ApprovalDecision): ChatMessage {
  const note = decision.note ? ` Their note: ${decision.note}` : '';
  const content = call.needsApproval ? `Not run: a person (${decision.by}) refused this call.${note}` : `Not run: a person (${decision.by}) refused this round of calls.${note}`;
  return { role: 'tool', toolCallId: call.id, name: call.name, content, isError: true };
}

/** True when the call is of a tool that runs here (MCP or code), not a message. */
function runs(tools: AgentTools, call: ToolCall): boolean {
  const kind = tools.resolve(call.name)?.kind;
  return kind === 'mcp' || kind === 'code';
}

/** A code tool's input type, compiled with the organism's types (for the references in it). */
function inputType(tool: CodeTool, registry: PayloadRegistry): PayloadType {
  const known = registry.get(tool.input.name);
  return known && known.def === tool.input ? known : new PayloadType(tool.input, (name) => registry.get(name)?.def);
}

function message(call: ToolCall, target: Extract<ToolTarget, { kind: 'peer' | 'reply' }>, args: Record<string, unknown>): Handled {
  if (target.kind === 'peer') {
    const checked = validated(call, target.peer.types, args);
    if (!checked.ok) return checked.refused;
    return {
      kind: 'send',
      outgoing: { to: target.peer.name, payloadType: checked.type, payload: checked.payload },
      result: accepted(call, `will be sent to ${target.peer.name} when your answer is complete`),
    };
  }
  if (target.types) {
    const checked = validated(call, target.types, args);
    if (!checked.ok) return checked.refused;
    return { kind: 'send', outgoing: { payloadType: checked.type, payload: checked.payload }, result: accepted(call, 'reply will be sent when your answer is complete') };
  }
  // A free reply (the sender is outside the organism): `{payloadType, payload}`.
  const { payloadType, payload } = args;
  if (typeof payloadType !== 'string' || typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return refused(call, [`${call.name}: expected {"payloadType": "<type>", "payload": {...}}`]);
  }
  return { kind: 'send', outgoing: { payloadType, payload: payload as Record<string, unknown> }, result: accepted(call, 'reply will be sent when your answer is complete') };
}

/** A send call's arguments checked against the target's type, or for several types the one its key names (`{"Ticket": {...}}`). */
function validated(
  call: ToolCall,
  types: readonly PayloadType[],
  args: Record<string, unknown>,
): { ok: true; type: string; payload: Record<string, unknown> } | { ok: false; refused: Handled } {
  const [only] = types;
  let type = only;
  let payload: unknown = args;
  if (types.length > 1) {
    const member = unionMember(types, args);
    if ('error' in member) return { ok: false, refused: refused(call, [`${call.name}: ${member.error}`]) };
    ({ type, payload } = member);
  }
  if (!type) return { ok: false, refused: refused(call, [`${call.name}: the target accepts no payload type`]) };
  const checked = type.validate(payload);
  if (!checked.ok) return { ok: false, refused: refused(call, fieldErrors(types.length > 1 ? `${call.name} ${type.name}` : call.name, checked.errors)) };
  return { ok: true, type: type.name, payload: checked.value };
}

async function runMcp(
  call: ToolCall,
  tool: McpTool,
  args: Record<string, unknown>,
  ctx: HandlerContext,
  view: AgentWorldView,
  llmCallId: string,
  listener: ListenerConfig,
): Promise<Handled> {
  const outcome = await view.callMcp({ tool, arguments: args, signal: ctx.signal, llmCallId, threadId: ctx.threadId, messageId: ctx.messageId, agent: listener.name });
  return ran(call, outcome);
}

async function runCode(
  call: ToolCall,
  target: Extract<ToolTarget, { kind: 'code' }>,
  args: Record<string, unknown>,
  ctx: HandlerContext,
  view: AgentWorldView,
  llmCallId: string,
  listener: ListenerConfig,
): Promise<Handled> {
  const outcome = await view.callCode({
    tool: target.tool,
    type: target.type,
    arguments: args,
    signal: ctx.signal,
    llmCallId,
    threadId: ctx.threadId,
    messageId: ctx.messageId,
    agent: listener.name,
    log: ctx.log,
  });
  return ran(call, outcome);
}

function ran(call: ToolCall, outcome: { readonly text: string; readonly isError: boolean }): Handled {
  return { kind: 'ran', result: { role: 'tool', toolCallId: call.id, name: call.name, content: outcome.text, ...(outcome.isError ? { isError: true } : {}) } };
}

function parseArguments(call: ToolCall): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = JSON.parse(call.arguments === '' ? '{}' : call.arguments);
  } catch (err) {
    return { ok: false, error: `${call.name}: the arguments are not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: `${call.name}: the arguments must be a JSON object` };
  return { ok: true, value: value as Record<string, unknown> };
}

function fieldErrors(tool: string, errors: readonly FieldError[]): string[] {
  return errors.map((e) => `${tool}: ${e.path || '(root)'}: ${e.message}`);
}

/** A tool call past `max_tool_calls_per_round`: an error result, so the model may call it again next round. */
function notRun(call: ToolCall, cap: number): Handled {
  return {
    kind: 'ran',
    result: {
      role: 'tool',
      toolCallId: call.id,
      name: call.name,
      content: `Not run: at most ${cap} tool calls run in one round (max_tool_calls_per_round); call it again in a later round if you still need it.`,
      isError: true,
    },
  };
}

function accepted(call: ToolCall, what: string): ChatMessage {
  return { role: 'tool', toolCallId: call.id, name: call.name, content: `Accepted: ${what}.` };
}

function refused(call: ToolCall, errors: readonly string[]): Handled {
  return {
    kind: 'refused',
    errors,
    result: {
      role: 'tool',
      toolCallId: call.id,
      name: call.name,
      content: `Not sent. Fix these and call again:\n${errors.map((e) => `- ${e}`).join('\n')}`,
      isError: true,
    },
  };
}
