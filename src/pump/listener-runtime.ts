import type { ListenerConfig } from '../config/types.js';
import type { AgentState } from '../events/types.js';
import type { Handler } from '../core/handler.js';

/** A registered listener and its live state. */
export class ListenerRuntime {
  paused = false;
  inFlight = 0;
  /** Deliveries whose handler is still running (what the concurrency limits count; see PumpState.running). */
  running = 0;
  /** Deliveries currently awaiting an LLM response. */
  waiting = 0;
  lastFailed = false;
  messageCount = 0;
  lastActivity: number | null = null;
  currentThread: string | null = null;
  /** Last state reported on the event bus (to emit changes only). */
  reportedState: AgentState = 'idle';

  constructor(
    public config: ListenerConfig,
    public handler: Handler,
    public handlerVersion: string,
  ) {}

  get name(): string {
    return this.config.name;
  }

  get state(): AgentState {
    if (this.paused) return 'paused';
    if (this.waiting > 0) return 'waiting';
    if (this.inFlight > 0) return 'processing';
    if (this.lastFailed) return 'error';
    return 'idle';
  }
}
