import type { OrganismError } from '../errors/catalogue.js';
import type { CallRecordSink, LlmCallRecord, ToolCallRecord } from './llm.js';

/** The LLM calls and MCP tool calls of one delivery or thread, oldest first. */
export interface RecordedCalls {
  readonly calls: readonly LlmCallRecord[];
  /** Tool calls requested by the calls above. */
  readonly tools: readonly ToolCallRecord[];
  /** Calls matching before paging (threads page; a delivery's are all returned). */
  readonly total: number;
}

/**
 * Every LLM call and MCP tool call, kept with the journal's retention: a call goes when its
 * delivery's journal entry is pruned (or, in memory, evicted).
 */
export interface LlmCallStore extends CallRecordSink {
  forMessage(messageId: string): Promise<RecordedCalls>;
  forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
}

/**
 * Operator decisions that must outlive the process: paused agents (finished threads' budgets are
 * the budget ledger's).
 * An embedded store answers at once; a network database (PostgreSQL) returns promises for what
 * it cannot answer or persist synchronously, and the caller awaits them where it matters.
 */
export interface OperatorStateStore {
  /** The paused agents (a network store answers from what it loaded at open and wrote since). */
  pausedAgents(): readonly string[];
  /** Persisted before it returns, or before its promise resolves (a crash right after a pause keeps the agent paused). */
  setPaused(agent: string, paused: boolean): void | Promise<void>;
  /**
   * Re-reads what other processes may have changed (a database shared by several processes);
   * omitted where this process is the only writer.
   */
  refresh?(): Promise<void>;
}

/** What is wrong with the data directory now, as /health reports it. */
export interface StorageProblem {
  /** degraded: passes by itself (space freed); unhealthy: needs the operator (deleted, damaged). */
  readonly status: 'degraded' | 'unhealthy';
  readonly error: OrganismError;
}

/** A process of a shared organism (a row of PostgreSQL's `workers`), as GET /api/v1/workers shows it. */
export interface WorkerRecord {
  readonly id: string;
  /** `serve` (the control API, with or without handlers) or `worker` (handlers only). */
  readonly kind: 'serve' | 'worker';
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly handlers: boolean;
  readonly configHash: string;
  readonly startedAt: number;
  readonly heartbeatAt: number;
  readonly stoppedAt: number | null;
  /** Heartbeating within its lease and not stopped: its claims are its own. */
  readonly alive: boolean;
  /** `--concurrency`; null: the organism-wide limit. */
  readonly concurrency: number | null;
  readonly inFlight: number;
  readonly leaseMs: number;
}
