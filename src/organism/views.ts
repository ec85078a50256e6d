import type { AgentState } from '../events/types.js';
import type { ListenerRuntime } from '../pump/listener-runtime.js';

/** What operators see of a listener (the control service serializes this). */
export interface AgentInfo {
  readonly name: string;
  readonly description: string;
  readonly isAgent: boolean;
  readonly peers: readonly string[];
  readonly payloadClass: string;
  readonly state: AgentState;
  readonly currentThread: string | null;
  readonly queueDepth: number;
  readonly lastActivity: number | null;
  readonly messageCount: number;
  readonly model: string | null;
  readonly inFlight: number;
}

export function agentInfo(runtime: ListenerRuntime): AgentInfo {
  const c = runtime.config;
  return {
    name: c.name,
    description: c.description,
    isAgent: c.agent,
    peers: c.peers,
    payloadClass: c.payload,
    state: runtime.state,
    currentThread: runtime.currentThread,
    queueDepth: runtime.queue.size,
    lastActivity: runtime.lastActivity,
    messageCount: runtime.messageCount,
    model: c.handlerRef === 'builtin:llm' ? c.model : null,
    inFlight: runtime.inFlight,
  };
}
