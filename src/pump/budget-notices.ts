import type { BudgetThresholdEvent } from '../usage/budgets.js';
import { newId } from '../util/ids.js';
import { PumpDelivery } from './delivery.js';
import { BUDGET_SENDER, BUDGET_WARNING_TYPE, type Message } from '../core/message.js';

/**
 * A thread's token budget crossing a threshold: announced on the bus, and a BudgetWarning is
 * journaled and queued for the agent that spends it (in the thread's trace, after the delivery
 * that crossed it).
 */
export abstract class PumpBudgetNotices extends PumpDelivery {
  protected onBudgetThreshold(e: BudgetThresholdEvent): void {
    this.deps.bus.emit({
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
    const thread = this.threads.get(e.threadId);
    if (!thread || thread.status === 'killed' || !this.runtimes.has(e.agent)) return;
    const parent = [...this.deliveries.values()].find((d) => d.thread === thread && d.runtime.name === e.agent);
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
      timestamp: this.now(),
      parentId: parent?.message.id ?? null,
      hops: parent ? parent.message.hops + 1 : 0,
      metadata: thread.metadata,
      attempt: 1,
      traceContext: parent?.watch?.traceContext ?? null,
    };
    // Journaled PENDING first (durable), then queued for the agent.
    thread.queued++; // hold the thread open while the warning is being journaled
    void Promise.resolve(this.deps.journal.pending([warning]))
      .then(() => {
        thread.queued--;
        if (thread.status === 'killed') return this.settleThread(thread);
        this.enqueue(warning, thread, true);
        this.schedule();
      })
      .catch((err: unknown) => {
        thread.queued--;
        this.deps.logger.error({ err }, 'journal write failed');
        this.settleThread(thread);
      });
  }
}
