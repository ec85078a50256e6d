import type { HandlerContext, HandlerLogger } from '../core/handler.js';
import type { BoundLlmClient } from '../llm/types.js';
import { BUDGET_WARNING_TYPE, isSystemName, SYSTEM_ERROR_TYPE, type Message } from '../core/message.js';
import type { FailureReason } from '../core/delivery.js';
import { ApprovalNeeded, type ApprovalState } from '../core/approval.js';
import { retryDelayMs } from './retry-policy.js';
import type { Claim } from '../core/queue.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { Logger } from '../util/logger.js';
import type { Admission } from './admission.js';
import type { Bookkeeping } from './bookkeeping.js';
import { Cancellation } from './cancellation.js';
import type { Intake } from './intake.js';
import type { ListenerRuntime } from './listener-runtime.js';
import type { DeliveryOutcome, DeliveryWatch } from './observer.js';
import { traced, type Outcomes } from './outcomes.js';
import { normalizeResult, routeOutgoing } from './routing.js';
import { acceptedTypes } from '../config/accepted-types.js';
import type { Delivery, PumpState } from './state.js';
import { systemErrorMessage } from './system-messages.js';
import type { ThreadLifecycle } from './thread-lifecycle.js';
import type { ListenerSetup } from './setup.js';

const SYSTEM_PAYLOADS = new Set([SYSTEM_ERROR_TYPE, BUDGET_WARNING_TYPE]);

/**
 * The delivery of one message: runs its listener's handler with its context (bounded by the
 * handler's timeout, cut short by a kill or a shutdown), routes what the handler returned, and
 * books the ack or the failure. The queue hands messages out through `take`.
 */
export class Deliveries {
  constructor(
    private readonly state: PumpState,
    private readonly books: Bookkeeping,
    private readonly outcomes: Outcomes,
    private readonly lifecycle: ThreadLifecycle,
    private readonly intake: Intake,
    private readonly admission: Admission,
  ) {}

  /**
   * Starts delivering a message the queue handed out: one that waited in this process (claim
   * null), or one claimed from the store, whose thread this process may never have seen (its
   * live record is made from the claim's). A message whose listener is gone or whose thread was
   * killed fails at once, as its outcome (also when a claim read the thread before its kill
   * committed: this process heard of the kill).
   */
  take(message: Message, claim: Claim | null): void {
    const { state } = this;
    const { threads } = state;
    let live = threads.get(message.threadId);
    if (claim === null) {
      // It waited in this process: counted in the queue and in its thread until now.
      state.queued--;
      if (live) live.queued--;
    }
    const runtime = state.listeners.get(message.to);
    const stored = claim?.thread ?? null;
    const refusal = !runtime
      ? { reason: 'unknown_target' as const, error: Errors.UNKNOWN_TARGET(message.to).detail }
      : (live ?? stored)?.status === 'killed' || threads.wasKilled(message.threadId)
        ? { reason: 'killed' as const, error: Errors.THREAD_KILLED(message.threadId).detail }
        : null;
    if (refusal || !runtime) {
      state.deps.queue.release(message);
      this.outcomes.failTaken(message, refusal!.reason, refusal!.error);
      if (live) this.lifecycle.settle(live);
      return;
    }
    live ??= threads.activate(message.threadId, state.now(), message.metadata, stored);
    // A thread the store finished and a new message revived.
    if (live.status === 'completed' || live.status === 'error') live.status = 'active';
    void this.deliver(runtime, message, live, state.deps.setups?.of(message) ?? null);
  }

  /** `setup`: the other organism.yaml the message's thread runs under, loading (null: the running one). */
  private async deliver(runtime: ListenerRuntime, message: Message, thread: Delivery['thread'], setup: Promise<ListenerSetup> | null): Promise<void> {
    const { state } = this;
    const { deps } = state;
    thread.inFlight++;
    state.inFlight++;
    runtime.inFlight++;
    state.running++;
    runtime.running++;
    runtime.currentThread = message.threadId;
    runtime.lastActivity = state.now();
    runtime.messageCount++;
    const cancellation = new Cancellation();
    thread.cancellations.add(cancellation);
    const observers = deps.observers;
    const watch = observers?.active ? observers.started(message, runtime.config) : null;
    const delivery: Delivery = { message, runtime, listener: runtime, setup: null, thread, cancellation, usage: [], handlerDone: false, watch, outcome: null };
    state.deliveries.set(message.id, delivery);
    state.reportState(runtime);
    // Not retried: a lost DISPATCHED mark costs nothing (the ack moves the entry from PENDING).
    this.books.step(() => deps.queue.started(message), false);

    try {
      if (setup && !(await this.runsUnder(delivery, setup))) return;
      if (SYSTEM_PAYLOADS.has(message.payloadType) && isSystemName(message.from)) {
        // System notices are recorded in the listener's history (an LLM agent sees them in its
        // next prompt) without running the handler, so they can never start a loop. A
        // SystemError a listener sent (its failure routed by `on_error`) runs the handler.
        this.handlerDone(delivery);
        const { acked, notices } = await this.outcomes.ack(delivery, [], null);
        this.send(notices, thread);
        if (!acked) return;
        delivery.outcome = ACKED;
        deps.bus.emit({ type: 'message', message, state: 'ACKED' });
      } else if (delivery.listener.config.human) {
        await this.park(delivery);
      } else {
        await this.runHandler(delivery);
      }
    } catch (err) {
      deps.logger.error({ ...watch?.logFields, err, messageId: message.id }, 'delivery bookkeeping failed');
    } finally {
      watch?.end(delivery.outcome ?? { acked: false, reason: 'shutdown', error: 'the organism stopped during the delivery' });
      this.handlerDone(delivery);
      state.deliveries.delete(message.id);
      thread.cancellations.delete(cancellation);
      thread.inFlight--;
      state.inFlight--;
      runtime.inFlight--;
      if (runtime.inFlight === 0) runtime.currentThread = null;
      runtime.lastActivity = state.now();
      deps.queue.release(message);
      state.reportState(runtime);
      this.lifecycle.settle(thread);
      deps.queue.schedule();
      this.admission.notifyProgress();
    }
  }

  /**
   * Takes the listener as the thread's own organism.yaml declares it (a fork's configPath). A
   * file that no longer loads, or that has no such listener, fails the delivery saying so (not
   * retried: the file must change first; an operator may redeliver).
   */
  private async runsUnder(d: Delivery, pending: Promise<ListenerSetup>): Promise<boolean> {
    const { message, thread } = d;
    let failure: { reason: FailureReason; error: string };
    try {
      const setup = await pending;
      const listener = setup.listeners.get(message.to);
      if (listener) {
        d.setup = setup;
        d.listener = listener;
        return true;
      }
      failure = { reason: 'unknown_target', error: Errors.UNKNOWN_TARGET(message.to).detail };
    } catch (err) {
      failure = { reason: 'handler_error', error: err instanceof OrganismError ? err.detail : errorText(err) };
    }
    this.handlerDone(d);
    this.send(await this.outcomes.fail(d, failure.reason, failure.error, message.from), thread);
    return false;
  }

  private send(messages: readonly Message[], thread: Delivery['thread']): void {
    for (const m of messages) this.intake.enqueue(m, thread, true);
  }

  private async runHandler(d: Delivery): Promise<void> {
    const { message, runtime, thread, cancellation } = d;
    const { state } = this;
    const timeoutMs = d.listener.config.timeoutSeconds * 1000;
    const timer = setTimeout(() => cancellation.abort('timeout'), timeoutMs);
    let outcome: HandlerOutcome;
    try {
      for (let delay = OUTAGE_RETRY_MS; ; delay = Math.min(delay * 2, OUTAGE_RETRY_MAX_MS)) {
        outcome = await this.runOnce(d);
        // The handler met the store unreachable (a budget reservation, a call record, its history):
        // that is no fault of the delivery. It runs again once the store answers, as it would
        // after a restart, instead of ending its thread in error.
        if (outcome.ok || !Errors.STORAGE_UNAVAILABLE.is(outcome.error) || cancellation.aborted) break;
        if (!(await this.mayRunAgain(d, delay))) return;
        if (cancellation.aborted) break; // the outcome says why (killed, timeout, shutdown)
      }
    } finally {
      clearTimeout(timer);
    }
    this.handlerDone(d);

    const cause = cancellation.reason;
    if (cause === 'shutdown') return; // stays DISPATCHED: a durable journal redelivers it after restart
    if (cause === 'killed' || thread.status === 'killed') {
      this.send(await this.outcomes.fail(d, 'killed', Errors.THREAD_KILLED(thread.id).detail, null), thread);
      return;
    }
    if (cause === 'timeout') {
      const error = Errors.HANDLER_TIMEOUT(runtime.name, timeoutMs).detail;
      if (await this.retried(d, 'timeout', error)) return;
      this.send(await this.outcomes.fail(d, 'timeout', error, message.from), thread);
      return;
    }
    if (!outcome.ok) {
      if (outcome.error instanceof ApprovalNeeded) {
        await this.park(d, outcome.error.state);
        return;
      }
      if (Errors.BUDGET_EXHAUSTED.is(outcome.error)) {
        thread.error = outcome.error.detail;
        this.send(await this.outcomes.fail(d, 'budget_exhausted', outcome.error.detail, runtime.name), thread);
        return;
      }
      if (Errors.GUARDRAIL_BLOCKED.is(outcome.error)) {
        // A guard's verdict is no passing fault: no retry; an operator may redeliver.
        this.send(await this.outcomes.fail(d, 'guardrail', outcome.error.detail, message.from), thread);
        return;
      }
      const text = outcome.error instanceof OrganismError ? outcome.error.detail : errorText(outcome.error);
      const error = Errors.HANDLER_FAILED(runtime.name, text).detail;
      if (await this.retried(d, 'handler_error', error)) return;
      this.send(await this.outcomes.fail(d, 'handler_error', error, message.from), thread);
      return;
    }
    const normalized = normalizeResult(outcome.result);
    const { setup } = d;
    const routed = normalized.ok
      ? routeOutgoing(normalized.items, {
          sender: d.listener.config,
          cause: message,
          maxHops: state.limits.maxHops,
          now: state.now(),
          registry: setup?.registry ?? state.deps.registry,
          acceptedTypes: (name) => {
            const listener = (setup ? setup.listeners.get(name) : state.listeners.get(name))?.config;
            return listener ? acceptedTypes(listener) : undefined;
          },
          traceContext: normalized.items.length > 0 ? (d.watch?.traceContext ?? null) : null,
        })
      : ({ ok: false, error: normalized.error } as const);
    if (!routed.ok) {
      this.send(await this.outcomes.fail(d, 'invalid_result', Errors.INVALID_RESULT(runtime.name, routed.error).detail, message.from), thread);
      return;
    }
    if (state.deps.payloadRedactor) {
      const redactor = state.deps.payloadRedactor();
      // privacy.redact_payloads: the messages are journaled (and handed on) redacted.
      if (redactor) {
        const messages = routed.messages as Message[];
        for (let i = 0; i < messages.length; i++) messages[i] = { ...messages[i]!, payload: redactor.value(messages[i]!.payload) };
      }
    }
    if (state.deps.loopGuard) {
      try {
        await state.deps.loopGuard.check(message, routed.messages, d.usage, thread.messageCount);
      } catch (err) {
        state.deps.logger.error({ err, messageId: message.id, threadId: message.threadId }, 'the loop breaker failed; the delivery goes on');
      }
    }
    const notices = routed.refused.map((r) => systemErrorMessage(message, runtime.name, r.reason, r.error, state.now(), { messageId: r.message.id, to: r.message.to }));
    const outgoing = notices.length === 0 ? routed.messages : [...routed.messages, ...traced(notices, d.watch)];
    const { acked, notices: failureNotices } = await this.outcomes.ack(d, outgoing, routed.refused[0]?.error ?? null);
    this.send(failureNotices, thread);
    if (!acked) return;
    d.outcome = ACKED;
    runtime.lastFailed = false;
    state.deps.bus.emit({ type: 'message', message, state: 'ACKED' });
    for (const r of routed.refused) {
      this.outcomes.refuse(r);
      // A refused message is a fault of the conversation: the thread ends in `error`.
      thread.failed = true;
      thread.error ??= r.error;
    }
    this.send(outgoing, thread);
  }

  /**
   * The listener's `retry:` for a thrown error or a timeout: while the delivery has attempts
   * left, the try is booked failed and the entry goes back to PENDING, due after the backoff
   * (the message waits on its queue or in the store, holding no handler slot). True when the
   * delivery ended so (retried, or left for the next start by a shutdown); false: it fails now.
   */
  private async retried(d: Delivery, reason: FailureReason, error: string): Promise<boolean> {
    const { message, thread } = d;
    const policy = d.listener.config.retry;
    if (!policy || message.attempt >= policy.maxAttempts || thread.status === 'killed') return false;
    const { state } = this;
    const delayMs = retryDelayMs(policy, message.attempt);
    const booked = await this.outcomes.retry(d, reason, error, state.now() + delayMs);
    if (booked === null) return true;
    if ('redirect' in booked) {
      const { redirect } = booked;
      this.send(await this.outcomes.fail(d, redirect.reason, redirect.error, redirect.reason === 'killed' ? null : message.from), thread);
      return true;
    }
    const retry = booked.next;
    d.outcome = { acked: false, reason, error };
    state.deps.logger.info(
      { ...d.watch?.logFields, messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt, nextAttemptAt: retry.notBefore, reason },
      `${error}; retried as attempt ${retry.attempt} of ${policy.maxAttempts} in ${delayMs} ms`,
    );
    this.intake.requeue(retry, thread);
    return true;
  }

  /**
   * A delivery to a `builtin:human` listener is an ask: instead of running a handler it becomes
   * AWAITING (expiring after the listener's own timeout, if it has one) and frees its slot at
   * once; the inbox (organism layer) lists it and closes it with a person's answer.
   */
  private async park(d: Delivery, approval?: ApprovalState): Promise<void> {
    const { message, runtime, thread, cancellation } = d;
    const { state } = this;
    const { deps } = state;
    this.handlerDone(d);
    if (cancellation.reason === 'killed' || thread.status === 'killed') {
      this.send(await this.outcomes.fail(d, 'killed', Errors.THREAD_KILLED(thread.id).detail, null), thread);
      return;
    }
    // A pending approval never expires by itself (a person decides, or its thread is killed).
    const seconds = approval ? null : (d.listener.config.human?.timeoutSeconds ?? null);
    const expiresAt = seconds === null ? null : state.now() + seconds * 1000;
    let parked = false;
    const booked = await this.books.write(d, async () => {
      // An approval parks with the usage of the LLM calls that proposed it, in the same write.
      parked = (await deps.queue.park(message, expiresAt, approval ? { state: approval, usage: d.usage } : undefined)).committed;
    });
    // A shutdown came first (it stays DISPATCHED: parked again after the restart), or the claim
    // was taken back (it parks elsewhere).
    if (booked !== true || !parked) return;
    let open = state.asks.get(thread.id);
    if (!open) state.asks.set(thread.id, (open = new Set()));
    open.add(message.id);
    d.outcome = ACKED;
    runtime.lastFailed = false;
    deps.bus.emit({ type: 'message', message, state: 'AWAITING' });
  }

  /**
   * Runs the handler once (in a microtask, so a throw is its outcome too): what it returned or
   * threw, or the abort's cause as soon as the delivery is cut short (the handler may run on).
   */
  private runOnce(d: Delivery): Promise<HandlerOutcome> {
    return new Promise((resolve) => {
      const { cancellation } = d;
      const stop = cancellation.onAbort((cause) => resolve({ ok: false, error: cause }));
      if (cancellation.aborted) resolve({ ok: false, error: cancellation.reason });
      const handle = () => d.listener.handler(d.message.payload, this.context(d));
      Promise.resolve()
        .then(d.watch ? () => d.watch!.run(handle) : handle)
        .then(
          (result) => {
            stop();
            resolve({ ok: true, result });
          },
          (error) => {
            stop();
            resolve({ ok: false, error });
          },
        );
    });
  }

  /**
   * After `delay` (or an abort: a kill, a timeout, a shutdown, which the caller then ends it
   * by), whether a delivery whose handler met the store unreachable may go on: not (shared
   * mode) once its claim was taken back while the store was away; then nothing of it is written.
   */
  private async mayRunAgain(d: Delivery, delay: number): Promise<boolean> {
    this.state.deps.logger.debug(
      { messageId: d.message.id, threadId: d.message.threadId, to: d.message.to, delayMs: delay },
      'the handler met the store unreachable; it runs again when the store answers',
    );
    if (d.cancellation.aborted) return true;
    const cutShort = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        stop();
        resolve(false);
      }, delay);
      const stop = d.cancellation.onAbort(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (cutShort) return true;
    try {
      if (await this.state.deps.queue.stillHeld(d.message)) return true;
    } catch {
      return true; // still unreachable: the next run meets it again and waits longer
    }
    this.state.deps.logger.warn(
      { messageId: d.message.id, threadId: d.message.threadId, to: d.message.to, attempt: d.message.attempt },
      'the claim of a delivery waiting out a database outage was taken back meanwhile; it runs elsewhere',
    );
    return false;
  }

  /** Frees the delivery's concurrency slot once (the rest of it waits for the journal). */
  private handlerDone(d: Delivery): void {
    if (d.handlerDone) return;
    d.handlerDone = true;
    this.state.running--;
    d.runtime.running--;
    this.state.deps.queue.schedule('slot');
  }

  /**
   * The handler's context. Its AbortSignal and its bound LLM client are made when first used
   * (most handlers use neither; see Cancellation).
   */
  private context(d: Delivery): HandlerContext {
    const { message, runtime, cancellation, setup } = d;
    const { config } = d.listener;
    const { deps } = this.state;
    let bound: BoundLlmClient | null = null;
    const bind = (): BoundLlmClient =>
      (setup?.llm ?? deps.llm).bind(
        {
          threadId: message.threadId,
          agent: runtime.name,
          messageId: message.id,
          metadata: { ...message.metadata },
          signal: cancellation.signal,
          guards: setup ? setup.guards(runtime.name) : (deps.guards?.(runtime.name) ?? []),
          // Token deltas go to live watchers only: never journaled.
          onDelta: (callId, text) => deps.bus.emit({ type: 'llm_delta', threadId: message.threadId, messageId: message.id, agent: runtime.name, callId, text }),
        },
        { model: config.model, maxOutputTokens: config.maxOutputTokens },
      );
    const llm: BoundLlmClient = {
      complete: async (request) => {
        bound ??= bind();
        runtime.waiting++;
        this.state.reportState(runtime);
        try {
          return await bound.complete(request);
        } finally {
          runtime.waiting--;
          this.state.reportState(runtime);
        }
      },
    };
    return {
      threadId: message.threadId,
      messageId: message.id,
      from: message.from,
      self: runtime.name,
      payloadType: message.payloadType,
      attempt: message.attempt,
      metadata: message.metadata,
      get signal() {
        return cancellation.signal;
      },
      llm,
      log: handlerLogger(deps.logger, runtime.name, message, d.watch),
      peers: config.peers,
      history: (limit = 50) => deps.journal.threadHistory(message.threadId, runtime.name, limit),
    };
  }
}

const ACKED: DeliveryOutcome = { acked: true };
/** What one run of a handler came to: its result, or what it threw (or the abort's cause). */
type HandlerOutcome = { ok: true; result: unknown } | { ok: false; error: unknown };
/** A handler that met the store unreachable runs again after this long, doubling up to the max. */
const OUTAGE_RETRY_MS = 250;
const OUTAGE_RETRY_MAX_MS = 5_000;

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/**
 * The handler's logger, its pino child made at the first line (most deliveries write none: the
 * child's bindings and the trace fields cost every delivery otherwise). watch: the delivery's
 * trace fields (trace_id, span_id), carried explicitly: no context lookup per line.
 */
function handlerLogger(logger: Logger, listener: string, message: Message, watch: DeliveryWatch | null): HandlerLogger {
  let child: Logger | null = null;
  const log = (): Logger => {
    if (child === null) {
      const trace = watch?.logFields ?? null;
      child = logger.child(trace ? { listener, threadId: message.threadId, messageId: message.id, ...trace } : { listener, threadId: message.threadId, messageId: message.id });
    }
    return child;
  };
  return {
    debug: (msg, data) => log().debug(data ?? {}, msg),
    info: (msg, data) => log().info(data ?? {}, msg),
    warn: (msg, data) => log().warn(data ?? {}, msg),
    error: (msg, data) => log().error(data ?? {}, msg),
  };
}
