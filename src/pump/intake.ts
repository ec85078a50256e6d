import { isSystemName, type Message } from '../core/message.js';
import { Errors } from '../errors/catalogue.js';
import type { Bookkeeping } from './bookkeeping.js';
import type { Outcomes } from './outcomes.js';
import type { PumpState } from './state.js';
import type { ThreadLifecycle } from './thread-lifecycle.js';
import type { LiveThread } from './thread-tracker.js';

/**
 * Puts a journaled message (an inject, a delivery's outgoing message, a notice, a recovered
 * one) on its way: counted into its thread, then placed by the queue: waiting here for its
 * listener, waiting in the store for any process's claim, or delivered to the outside world.
 */
export class Intake {
  constructor(
    private readonly state: PumpState,
    private readonly books: Bookkeeping,
    private readonly outcomes: Outcomes,
    private readonly lifecycle: ThreadLifecycle,
  ) {}

  enqueue(message: Message, thread: LiveThread, fresh: boolean): void {
    const { state } = this;
    const { deps } = state;
    state.totalMessages++;
    thread.messageCount++;
    thread.lastActivity = message.timestamp;
    if (!isSystemName(message.from)) state.threads.addParticipant(thread, message.from);
    state.threads.addParticipant(thread, message.to);
    if (fresh) deps.bus.emit({ type: 'message', message, state: 'PENDING' });
    switch (deps.queue.place(message)) {
      case 'queued':
        state.threads.touch(thread);
        state.queued++;
        thread.queued++;
        return;
      case 'out':
        // Replies and errors addressed to the outside world end here: recorded, acknowledged.
        this.books.step(() => deps.queue.deliverOut(message));
        deps.bus.emit({ type: 'message', message, state: 'ACKED' });
        break;
      case 'unknown':
        this.outcomes.failQuietly(message, 'unknown_target', Errors.UNKNOWN_TARGET(message.to).detail);
        break;
      case 'elsewhere':
        break;
    }
    this.lifecycle.settle(thread);
  }

  /**
   * Places the next attempt of a retried delivery (the same message, journaled already): not a
   * new message of its thread, so nothing is counted but its wait.
   */
  requeue(message: Message, thread: LiveThread): void {
    const { state } = this;
    state.deps.bus.emit({ type: 'message', message, state: 'PENDING' });
    if (state.deps.queue.place(message) === 'queued') {
      state.threads.touch(thread);
      state.queued++;
      thread.queued++;
    }
  }
}
