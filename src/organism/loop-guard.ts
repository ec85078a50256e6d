import { LOOP_GUARD_DEFAULTS, type ListenerLoopGuard, type LoopGuardConfig } from '../config/loop-guard.js';
import type { JournalEntry } from '../core/journal.js';
import type { Journal } from '../core/journal.js';
import type { Message } from '../core/message.js';
import type { ThreadHold } from '../core/thread.js';
import type { UsageEvent, UsageStore } from '../core/usage.js';
import type { EventBus } from '../events/bus.js';
import type { LoopWatch } from '../pump/state.js';
import type { Logger } from '../util/logger.js';
import type { HoldRequest } from './holds.js';
import { cycleFinding, payloadHash, repeatFinding, velocityFinding, type Finding, type Hop } from './loop-rules.js';

/** One minute: the velocity rule's window. */
const MINUTE_MS = 60_000;
/** Usage events of one thread read for the velocity rule, at most. */
const VELOCITY_EVENTS = 10_000;

export interface LoopGuardHost {
  readonly journal: Journal;
  readonly usage: UsageStore;
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly now: () => number;
  /** The organism's `loop_guard:` (null: the defaults). */
  config(): LoopGuardConfig | null;
  /** A listener's `loop_guard:` overrides (undefined: none). */
  listener(name: string): ListenerLoopGuard | undefined;
  /** Every listener's overrides (what the smallest limits are). */
  overrides(): Iterable<ListenerLoopGuard | undefined>;
  /** The thread's hold row (held, or resumed), read from the store. */
  hold(threadId: string): Promise<ThreadHold | null>;
  /** Holds the thread (item 1). */
  holdThread(threadId: string, request: HoldRequest): Promise<unknown>;
}

/**
 * The loop breaker (issue 30). Before a delivery's ack commits, it looks at the thread's
 * traffic: the newest `window` journal entries of the thread (its state in the store, shared by
 * every process of a cluster, so deliveries of one thread on different workers are judged on
 * the same history) plus the delivery's outgoing messages, and the thread's usage events of the
 * last minute. When a rule trips, the thread is held before the outgoing messages are
 * journaled: they wait PENDING, nothing more is spent. Only traffic after the thread's last
 * resume counts, against limits multiplied by the resume's factor.
 */
export class LoopGuard implements LoopWatch {
  constructor(private readonly host: LoopGuardHost) {}

  async check(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[], threadMessages: number): Promise<void> {
    const cfg = this.host.config() ?? LOOP_GUARD_DEFAULTS;
    if (!cfg.enabled) return;
    const spent = usage.reduce((n, u) => n + u.totalTokens, 0);
    const sends = outgoing.filter((m) => this.enabledFor(m.to, cfg));
    if (sends.length === 0 && spent === 0) return;
    const threadId = message.threadId;
    // A thread too short for any rule to trip (most threads: a few hops) costs no journal read.
    // Its count is this process's view (a cluster's: as of the claim), so a rule may trip one
    // delivery late there, never wrongly.
    const traffic = sends.length > 0 && threadMessages + sends.length > this.shortest(cfg);
    // First without the thread's hold row (most threads never had one); a finding is checked
    // again against the hold's baseline and factor.
    const entries = traffic ? await this.history(threadId, cfg.window) : [];
    if (!traffic && spent === 0) return;
    let finding = await this.find(message, sends, spent, usage, entries, cfg, null);
    if (!finding) return;
    const hold = await this.host.hold(threadId);
    if (hold?.held) return;
    if (hold) finding = await this.find(message, sends, spent, usage, entries, cfg, hold);
    if (!finding) return;
    this.host.bus.emit({ type: 'loop_detected', threadId, rule: finding.rule, edges: finding.edges, evidence: finding.evidence, messageId: message.id });
    this.host.logger.warn({ threadId, rule: finding.rule, edges: finding.edges, evidence: finding.evidence, messageId: message.id }, `loop detected: ${finding.reason}; the thread is held`);
    await this.host.holdThread(threadId, { rule: finding.rule, reason: finding.reason, evidence: { ...finding.evidence, edges: finding.edges }, by: 'loop_guard' });
  }

  /** The most messages a thread may have with no repeat or cycle rule able to trip (the smallest limits, factor 1). */
  private shortest(cfg: LoopGuardConfig): number {
    let repeats = cfg.maxRepeats;
    let cycles = cfg.maxCycles;
    for (const o of this.host.overrides()) {
      if (o?.maxRepeats !== undefined) repeats = Math.min(repeats, o.maxRepeats);
      if (o?.maxCycles !== undefined) cycles = Math.min(cycles, o.maxCycles);
    }
    // repeat: more than `repeats` crossings of one edge; cycle: a first pass and more than `cycles` repetitions of at least 2 hops.
    return Math.min(repeats, 2 * (cycles + 2) - 1);
  }

  private enabledFor(listener: string, cfg: LoopGuardConfig): boolean {
    return this.host.listener(listener)?.enabled ?? cfg.enabled;
  }

  private async history(threadId: string, window: number): Promise<JournalEntry[]> {
    const page = await this.host.journal.list({ threadId, limit: window, offset: 0, order: 'newest' });
    return [...page.items].reverse();
  }

  private async find(
    message: Message,
    sends: readonly Message[],
    spent: number,
    usage: readonly UsageEvent[],
    entries: readonly JournalEntry[],
    cfg: LoopGuardConfig,
    hold: ThreadHold | null,
  ): Promise<Finding | null> {
    const factor = hold?.limitFactor ?? 1;
    const since = hold?.resumedAt ?? null;
    const fresh = new Set(sends.map((m) => m.id));
    const hops: Hop[] = entries.filter((e) => !fresh.has(e.message.id) && (since === null || e.createdAt > since)).map((e) => hopOf(e.message));
    for (const m of sends) hops.push(hopOf(m));
    const newest = hops.slice(hops.length - sends.length);
    for (const hop of newest) {
      const limit = (this.host.listener(hop.to)?.maxRepeats ?? cfg.maxRepeats) * factor;
      const found = repeatFinding(hops, hop, limit);
      if (found) return found;
    }
    if (sends.length > 0 && entries.length > 0) {
      const found = cycleFinding(hops, cfg.maxCycleLength, (cycle) => Math.min(...cycle.map((h) => this.host.listener(h.to)?.maxCycles ?? cfg.maxCycles)) * factor);
      if (found) return found;
    }
    if (spent > 0) {
      const limit = (this.host.listener(message.to)?.tokensPerMinute ?? cfg.tokensPerMinute) * factor;
      if (limit > 0) {
        const tokens = await this.tokensLastMinute(message.threadId, usage, since);
        const found = velocityFinding(tokens, limit, { from: message.from, to: message.to });
        if (found) return found;
      }
    }
    return null;
  }

  /** The thread's tokens in the last minute (since its resume): the store's events and this delivery's (which may not be stored yet). */
  private async tokensLastMinute(threadId: string, usage: readonly UsageEvent[], since: number | null): Promise<number> {
    const from = Math.max(this.host.now() - MINUTE_MS, since === null ? 0 : since + 1);
    const page = await this.host.usage.history({ threadId, startTime: from, limit: VELOCITY_EVENTS, offset: 0 });
    const events = new Map<string, number>();
    for (const e of page.items) events.set(e.id, e.totalTokens);
    for (const e of usage) if (e.timestamp >= from) events.set(e.id, e.totalTokens);
    let total = 0;
    for (const n of events.values()) total += n;
    return total;
  }
}

function hopOf(m: Message): Hop {
  return { from: m.from, to: m.to, hash: payloadHash(m.payloadType, m.payload) };
}
