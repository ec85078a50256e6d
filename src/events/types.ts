import type { Message } from '../core/message.js';
import type { FailureReason } from '../core/delivery.js';
import type { DeliveryState } from '../core/journal.js';
import type { HoldRule, ThreadErasure, ThreadHold, ThreadRecord } from '../core/thread.js';
import type { UsageEvent } from '../usage/types.js';
import type { WorkerRecord } from '../core/work-source.js';
import type { InboxClosed, InboxItem } from '../core/inbox.js';

export type AgentState = 'idle' | 'processing' | 'waiting' | 'error' | 'paused';
export const AGENT_STATES: readonly AgentState[] = ['idle', 'processing', 'waiting', 'error', 'paused'];

export type OrganismStatus = 'starting' | 'running' | 'stopping' | 'stopped';

export interface ReloadResult {
  readonly success: boolean;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly updated: readonly string[];
  /** For each updated listener, its organism.yaml keys that changed (`prompt`, `model`, ...; `handler code`: the same handler's code changed). */
  readonly updatedFields: Readonly<Record<string, readonly string[]>>;
  /** Other organism.yaml keys that changed (`max_tokens_per_thread`, `llm.providers.mock.base_url`, ...). */
  readonly changed: readonly string[];
  /** The changed keys that take effect only at the next start. */
  readonly restartRequired: readonly string[];
  readonly error: string | null;
}

/** Everything the runtime reports in real time. The WebSocket layer maps these to frames. */
export type OrganismEvent =
  | { readonly type: 'message'; readonly message: Message; readonly state: DeliveryState }
  | { readonly type: 'agent_state'; readonly agent: string; readonly state: AgentState; readonly currentThread: string | null }
  | { readonly type: 'thread_created'; readonly thread: ThreadRecord }
  | { readonly type: 'thread_updated'; readonly thread: ThreadRecord }
  | {
      readonly type: 'peer_denied';
      readonly from: string;
      readonly to: string;
      readonly threadId: string;
      readonly messageId: string;
      readonly reason: string;
    }
  | { readonly type: 'reload'; readonly result: ReloadResult }
  | { readonly type: 'usage'; readonly usage: UsageEvent }
  | {
      readonly type: 'budget_warning';
      readonly threadId: string;
      readonly agent: string;
      readonly severity: string;
      readonly threshold: number;
      readonly percentUsed: number;
      readonly tokensUsed: number;
      readonly tokensRemaining: number;
      readonly maxTokens: number;
    }
  | { readonly type: 'organism_status'; readonly status: OrganismStatus }
  | {
      /** Text a model is writing, as it streams in (live only: never journaled nor replayed). */
      readonly type: 'llm_delta';
      readonly threadId: string;
      readonly messageId: string;
      readonly agent: string;
      readonly callId: string;
      readonly text: string;
    }
  | {
      readonly type: 'journal_failed';
      readonly message: Message;
      readonly reason: FailureReason;
      readonly error: string;
    }
  | {
      /**
       * A process of the organism came, stopped, or was lost (silent past its lease: killed,
       * frozen or cut off), as the `workers` table shows it to the process that noticed.
       */
      readonly type: 'worker';
      readonly change: WorkerChange;
      readonly worker: WorkerRecord;
    }
  | {
      /** A process took back the deliveries another one held (its lease expired): PENDING again (`retried`), or FAILED max_attempts (`failed`). */
      readonly type: 'deliveries_taken_back';
      /** The process that held them (null: nobody held them). */
      readonly worker: string | null;
      readonly name: string | null;
      readonly retried: number;
      readonly failed: number;
    }
  /** An ask started to wait for a person (issue 25). */
  | { readonly type: 'inbox_opened'; readonly item: InboxItem }
  /** An ask was answered, rejected, expired or closed by its thread's kill. */
  | { readonly type: 'inbox_closed'; readonly closed: InboxClosed }
  /** A thread was held (issue 30): by an operator, or by the loop breaker (after its loop_detected). */
  | { readonly type: 'thread_held'; readonly threadId: string; readonly hold: ThreadHold }
  /** A held thread was resumed. */
  | { readonly type: 'thread_resumed'; readonly threadId: string; readonly hold: ThreadHold }
  /** The loop breaker found a runaway thread (it holds it). */
  | {
      readonly type: 'loop_detected';
      readonly threadId: string;
      readonly rule: Exclude<HoldRule, 'operator'>;
      readonly edges: ReadonlyArray<{ readonly from: string; readonly to: string }>;
      readonly evidence: Readonly<Record<string, unknown>>;
      /** The delivery whose outcome tripped it. */
      readonly messageId: string;
    }
  /** A thread's recorded text was erased (replaced by tombstones). */
  | { readonly type: 'thread_erased'; readonly threadId: string; readonly erasure: ThreadErasure };

/** joined: a new process; stopped: it stopped gracefully; lost: silent past its lease; back: heartbeating again after it was lost. */
export type WorkerChange = 'joined' | 'stopped' | 'lost' | 'back';

export type OrganismEventType = OrganismEvent['type'];
export const ORGANISM_EVENT_TYPES: readonly OrganismEventType[] = [
  'message',
  'agent_state',
  'thread_created',
  'thread_updated',
  'peer_denied',
  'reload',
  'usage',
  'budget_warning',
  'organism_status',
  'journal_failed',
  'llm_delta',
  'worker',
  'deliveries_taken_back',
  'inbox_opened',
  'inbox_closed',
  'thread_held',
  'thread_resumed',
  'loop_detected',
  'thread_erased',
];
