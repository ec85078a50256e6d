import { EXTERNAL_SENDER, type Message } from '../../core/message.js';
import type { ThreadStatus } from '../../core/thread.js';
import type { OrganismEvent } from '../../events/types.js';
import type { ServiceOrganism as Organism } from '../service-organism.js';

/** What a caller from outside (an A2A peer, an MCP client) hears of the thread it started. */
export type ThreadUpdate =
  /** A message of the thread (each once, when first journaled), other than the reply to `api`. */
  | { readonly kind: 'message'; readonly message: Message }
  /** Text a model of the thread is writing (live only). */
  | { readonly kind: 'delta'; readonly agent: string; readonly text: string }
  /** The first message an agent of the thread sent to `api`: the caller's result. */
  | { readonly kind: 'reply'; readonly message: Message }
  /** The thread ended without (or after) a reply: completed, failed or killed. */
  | { readonly kind: 'end'; readonly status: Exclude<ThreadStatus, 'active' | 'waiting'>; readonly error: string | null };

/**
 * Calls `onUpdate` with what happens in one thread, from the organism's events (those of the
 * other processes of a cluster too), until the returned function is called. Subscribe before
 * injecting: nothing of the thread is missed.
 */
export function followThread(organism: Organism, threadId: string, onUpdate: (update: ThreadUpdate) => void): () => void {
  const seen = new Set<string>();
  let replied = false;
  let ended = false;
  const listener = (event: OrganismEvent): void => {
    if (ended) return;
    switch (event.type) {
      case 'message': {
        const m = event.message;
        if (m.threadId !== threadId || seen.has(m.id)) return;
        seen.add(m.id);
        if (m.to === EXTERNAL_SENDER && m.from !== EXTERNAL_SENDER && !replied) {
          replied = true;
          onUpdate({ kind: 'reply', message: m });
        } else onUpdate({ kind: 'message', message: m });
        return;
      }
      case 'llm_delta':
        if (event.threadId === threadId) onUpdate({ kind: 'delta', agent: event.agent, text: event.text });
        return;
      case 'thread_updated': {
        const t = event.thread;
        if (t.id !== threadId || t.status === 'active' || t.status === 'waiting') return;
        ended = true;
        onUpdate({ kind: 'end', status: t.status, error: t.error });
        return;
      }
      default:
        return;
    }
  };
  return organism.queries.events.on(listener, { relayed: true });
}
