import type { OrganismEvent } from '../events/types.js';

const MAX_PAYLOAD_CHARS = 160;

/** One human-readable line per interesting event, for `organism run`. */
export function formatEvent(event: OrganismEvent): string | null {
  const shortThread = (id: string) => id.slice(-8);
  switch (event.type) {
    case 'message': {
      const m = event.message;
      if (event.state !== 'PENDING') return null;
      let payload = JSON.stringify(m.payload);
      if (payload.length > MAX_PAYLOAD_CHARS) payload = `${payload.slice(0, MAX_PAYLOAD_CHARS)}...`;
      return `[${shortThread(m.threadId)}] ${m.from} -> ${m.to} ${m.payloadType} ${payload}`;
    }
    case 'journal_failed':
      return `[${shortThread(event.message.threadId)}] FAILED ${event.message.from} -> ${event.message.to}: ${event.reason}: ${event.error}`;
    case 'peer_denied':
      return `[${shortThread(event.threadId)}] DENIED ${event.from} -> ${event.to}: ${event.reason}`;
    case 'thread_updated':
      return event.thread.status === 'active' ? null : `[${shortThread(event.thread.id)}] thread ${event.thread.status}${event.thread.error ? `: ${event.thread.error}` : ''}`;
    case 'usage': {
      const u = event.usage;
      const cost = u.cost === null ? 'unpriced' : `$${u.cost.toFixed(6)}`;
      return `[${shortThread(u.threadId)}] llm ${u.agentId} ${u.model} ${u.promptTokens}+${u.completionTokens} tokens ${cost} ${Math.round(u.totalLatencyMs)} ms`;
    }
    case 'budget_warning':
      return `[${shortThread(event.threadId)}] budget ${event.severity}: ${event.agent} at ${event.percentUsed}%`;
    case 'reload':
      return `reload: +${event.result.added.join(',')} -${event.result.removed.join(',')} ~${event.result.updated.join(',')}`;
    case 'organism_status':
      return `organism ${event.status}`;
    default:
      return null;
  }
}
