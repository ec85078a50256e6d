import { BUDGET_SENDER, BUDGET_WARNING_TYPE, type Message } from '../core/message.js';
import type { BudgetThresholdEvent } from '../usage/budgets.js';
import { newId } from '../util/ids.js';
import type { Intake } from './intake.js';
import type { PumpState } from './state.js';
import type { ThreadLifecycle } from './thread-lifecycle.js';

/**
 * A thread's token budget crossing a threshold: announced on the bus, and a BudgetWarning is
 * journaled and queued for the agent that spends it (in the thread's trace, after the delivery
 * that crossed it).
 */
export class BudgetNotices {
  constructor(
    private readonly state: PumpState,
    private readonly intake: Intake,
    private readonly lifecycle: ThreadLifecycle,
  ) {}

  onThreshold(e: BudgetThresholdEvent): void {
    const { state } = this;
    const { deps } = state;
    deps.bus.emit({
      type: 'budget_warning',
      threadId: e.threadId,
      agent: e.agent,
      severity: e.severity,
      threshold: e.threshold,
      percentUsed: e.percentUsed,
      tokensUsed: e.tokensUsed,
      tokensRemaining: e.tokensRemaining,
      maxTokens: e.maxTokens,
    });
    const thread = state.threads.get(e.threadId);
    if (!thread || thread.status === 'killed' || !state.listeners.has(e.agent)) return;
    const parent = [...state.deliveries.values()].find((d) => d.thread === thread && d.runtime.name === e.agent);
    const warning: Message = {
      id: newId(),
      threadId: e.threadId,
      from: BUDGET_SENDER,
      to: e.agent,
      payloadType: BUDGET_WARNING_TYPE,
      payload: {
        percentUsed: e.percentUsed,
        tokensUsed: e.tokensUsed,
        tokensRemaining: e.tokensRemaining,
        maxTokens: e.maxTokens,
        severity: e.severity,
        message: e.message,
      },
      timestamp: state.now(),
      parentId: parent?.message.id ?? null,
      hops: parent ? parent.message.hops + 1 : 0,
      metadata: thread.metadata,
      attempt: 1,
      traceContext: parent?.watch?.traceContext ?? null,
    };
    // Journaled PENDING first (durable), then queued for the agent.
    thread.queued++; // hold the thread open while the warning is being journaled
    void Promise.resolve(deps.journal.pending([warning]))
      .then(() => {
        thread.queued--;
        if (thread.status === 'killed') return this.lifecycle.settle(thread);
        this.intake.enqueue(warning, thread, true);
        deps.queue.schedule();
      })
      .catch((err: unknown) => {
        thread.queued--;
        deps.logger.error({ err }, 'journal write failed');
        this.lifecycle.settle(thread);
      });
  }
}
