import { peerToolName, REPLY_TOOL } from '../llm/tool-names.js';
import type { ChatMessage, ToolCall } from '../llm/types.js';
import type { HandlerContext } from '../core/handler.js';
import type { Message } from '../core/message.js';

/** A payload as the model sees it in `tools` mode: the sender, its type, and the JSON. */
export function incomingTurn(from: string, payloadType: string, payload: unknown): string {
  return `<message from="${escapeAttr(from)}" type="${escapeAttr(payloadType)}">\n${JSON.stringify(payload)}\n</message>`;
}

/**
 * The thread as chat turns in `tools` mode: what this agent received (user turns) and what it
 * sent (its tool calls, each answered by a "sent" result), oldest first, ending with the
 * message being handled. A call to a peer of several types (`keyedPeers`) names its type as
 * the tool's parameters do: `{"Ticket": {...}}`.
 */
export function toolTurns(history: readonly Message[], ctx: HandlerContext, payload: Record<string, unknown>, keyedPeers: ReadonlySet<string> = new Set()): ChatMessage[] {
  const turns: ChatMessage[] = [];
  let calls: ToolCall[] = [];
  const flushCalls = () => {
    if (calls.length === 0) return;
    turns.push({ role: 'assistant', content: '', toolCalls: calls });
    for (const c of calls) turns.push({ role: 'tool', toolCallId: c.id, name: c.name, content: 'Sent.' });
    calls = [];
  };
  const user = (content: string) => {
    flushCalls();
    const last = turns[turns.length - 1];
    if (last && last.role === 'user') turns[turns.length - 1] = { role: 'user', content: `${last.content}\n${content}` };
    else turns.push({ role: 'user', content });
  };
  for (const m of history) {
    if (m.id === ctx.messageId) continue; // added last, below
    if (m.to === ctx.self) user(incomingTurn(m.from, m.payloadType, m.payload));
    else if (m.from === ctx.self) {
      const isPeer = ctx.peers.includes(m.to);
      calls.push({
        id: `hist_${m.id}`.replace(/[^A-Za-z0-9_-]/g, '_'),
        name: isPeer ? peerToolName(m.to) : REPLY_TOOL,
        arguments: JSON.stringify(isPeer ? (keyedPeers.has(m.to) ? { [m.payloadType]: m.payload } : m.payload) : { payloadType: m.payloadType, payload: m.payload }),
      });
    }
  }
  user(incomingTurn(ctx.from, ctx.payloadType, payload));
  // A conversation starts with a user turn: drop what this agent sent before it first heard anything.
  while (turns[0] && turns[0].role !== 'user') turns.shift();
  return turns;
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}
