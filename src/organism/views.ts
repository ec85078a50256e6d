import type { AgentState } from '../events/types.js';
import type { AgentLoad } from '../core/work-source.js';
import type { ListenerRuntime } from '../pump/listener-runtime.js';
import type { ListenerWorkElsewhere } from './work-elsewhere.js';

/** What operators see of a listener (the control service serializes this). */
export interface AgentInfo {
  readonly name: string;
  readonly description: string;
  readonly isAgent: boolean;
  readonly peers: readonly string[];
  readonly payloadClass: string;
  /** `payload: [A, B]`: every type it accepts, in order (payloadClass is the first); absent for one type. */
  readonly payloadClasses?: readonly string[];
  readonly state: AgentState;
  readonly currentThread: string | null;
  readonly queueDepth: number;
  readonly lastActivity: number | null;
  readonly messageCount: number;
  readonly model: string | null;
  readonly inFlight: number;
}

/** A listener as this process runs it, plus the deliveries other processes of a cluster finished (embedded: none). */
export function listenerInfo(runtime: ListenerRuntime, queued: number, elsewhere: ListenerWorkElsewhere): AgentInfo {
  const c = runtime.config;
  const last = runtime.lastActivity === null ? elsewhere.lastActivity : elsewhere.lastActivity === null ? runtime.lastActivity : Math.max(runtime.lastActivity, elsewhere.lastActivity);
  return {
    name: c.name,
    description: c.description,
    isAgent: c.agent,
    peers: c.peers,
    payloadClass: c.payload,
    ...(c.payloadTypes ? { payloadClasses: c.payloadTypes } : {}),
    state: runtime.state,
    currentThread: runtime.currentThread,
    queueDepth: queued,
    lastActivity: last,
    messageCount: runtime.messageCount + elsewhere.deliveries,
    model: c.handlerRef === 'builtin:llm' ? c.model : null,
    inFlight: runtime.inFlight,
  };
}

/** A listener's figures as the queue counts them (a cluster's: over every process; its state says processing while any runs it). */
export function withLoad(info: AgentInfo, load: AgentLoad | undefined): AgentInfo {
  const inFlight = load?.inFlight ?? 0;
  const state = info.state === 'idle' || info.state === 'error' ? (inFlight > 0 ? 'processing' : info.state) : info.state;
  return { ...info, queueDepth: load?.queued ?? 0, inFlight, state, currentThread: load?.currentThread ?? null };
}
