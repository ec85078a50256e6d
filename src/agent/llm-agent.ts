import type { ListenerConfig } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import type { ChatMessage } from '../llm/types.js';
import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import type { Handler, HandlerContext, Outgoing } from '../core/handler.js';
import type { Message } from '../core/message.js';
import { buildSystemPrompt, type PeerCard } from './prompt.js';
import { parseAgentReply } from './reply.js';
import { runToolAgent } from './tool-agent.js';
import type { AgentWorldView } from './world-view.js';

export type { AgentWorldView } from './world-view.js';

const HISTORY_LIMIT = 40;

/**
 * The handler of a `builtin:llm` listener. Its prompt is the listener's prompt, its declared
 * peers only, and the thread's history. In `tools` mode the model calls one tool per peer
 * (tool-agent.ts); in `xml` mode it answers in XML that is parsed into messages for peers or a
 * reply. An invalid answer gets one repair round with the validation errors; a second invalid
 * answer fails the delivery.
 */
export function createLlmAgentHandler(listener: ListenerConfig, world: () => AgentWorldView): Handler {
  return async (payload, ctx) => {
    const view = world();
    const peers: PeerCard[] = [];
    for (const name of listener.peers) {
      const peer = view.listener(name);
      const types = peer ? known(peer.payloadTypes, view.registry) : null;
      if (peer && types) peers.push({ name: peer.name, description: peer.description, types });
    }
    const senderType = replyTypesFor(ctx, view);
    if (view.replyFormat(listener) === 'tools') return runToolAgent(listener, payload, ctx, view, peers, senderType);
    const system = buildSystemPrompt({ listener, peers, sender: ctx.from, replyTypes: senderType });
    const history = await ctx.history(HISTORY_LIMIT);
    const messages = toTurns(history, ctx, payload, view.registry);

    const maxMessages = listener.maxMessagesPerReply ?? view.replyLimits.maxMessagesPerReply;
    const read = (content: string) => {
      // Checked before any parsing: the size alone bounds the work a reply can cause.
      const bytes = Buffer.byteLength(content, 'utf8');
      if (bytes > view.replyLimits.maxReplyBytes) throw Errors.LLM_REPLY_TOO_LARGE(listener.name, bytes, view.replyLimits.maxReplyBytes);
      return parseAgentReply(content, { peers, replyTypes: senderType, registry: view.registry, maxMessages });
    };

    const first = await ctx.llm.complete({ system, messages });
    const parsed = read(first.content);
    if (parsed.ok) return parsed.outgoing satisfies readonly Outgoing[];

    const repair: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: 'Your reply could not be used:\n' + parsed.errors.map((e) => `- ${e}`).join('\n') + '\nAnswer again, using only the XML elements described in your instructions.',
      },
    ];
    const second = await ctx.llm.complete({ system, messages: repair, repair: true });
    const reparsed = read(second.content);
    if (reparsed.ok) return reparsed.outgoing;
    throw Errors.LLM_INVALID_REPLY(listener.name, reparsed.errors.join('; '));
  };
}

/** The payload types a reply to the current sender may have (null: free, e.g. to `api`). */
function replyTypesFor(ctx: HandlerContext, view: AgentWorldView): PayloadType[] | null {
  const sender = view.listener(ctx.from);
  return sender ? known(sender.payloadTypes, view.registry) : null;
}

/** The named types, compiled; null when one of them is not (or no longer) registered. */
function known(names: readonly string[], registry: PayloadRegistry): PayloadType[] | null {
  const types: PayloadType[] = [];
  for (const name of names) {
    const type = registry.get(name);
    if (!type) return null;
    types.push(type);
  }
  return types.length > 0 ? types : null;
}

/** The thread as chat turns: what this agent received (user) and sent (assistant). */
function toTurns(history: readonly Message[], ctx: HandlerContext, payload: Record<string, unknown>, registry: PayloadRegistry): ChatMessage[] {
  const turns: ChatMessage[] = [];
  const push = (role: 'user' | 'assistant', content: string) => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) turns[turns.length - 1] = { role, content: `${last.content}\n${content}` };
    else turns.push({ role, content });
  };
  const incoming = (from: string, xml: string) => `<message from="${escapeAttr(from)}">\n${xml}\n</message>`;
  for (const m of history) {
    if (m.id === ctx.messageId) continue; // added last, below
    if (m.to === ctx.self) push('user', incoming(m.from, payloadXml(m, registry)));
    else if (m.from === ctx.self) push('assistant', `<send to="${escapeAttr(m.to)}">${payloadXml(m, registry)}</send>`);
  }
  const type = registry.get(ctx.payloadType);
  const currentXml = type ? type.toXml(payload) : `<${ctx.payloadType}>${escapeText(JSON.stringify(payload))}</${ctx.payloadType}>`;
  push('user', incoming(ctx.from, currentXml));
  while (turns[0]?.role === 'assistant') turns.shift();
  return turns;
}

function payloadXml(m: Message, registry: PayloadRegistry): string {
  const type = registry.get(m.payloadType);
  if (type) return type.toXml(m.payload);
  return `<${m.payloadType}>${escapeText(JSON.stringify(m.payload))}</${m.payloadType}>`;
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
