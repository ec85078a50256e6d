import { Trouble } from './trouble.js';
import { createHash } from 'node:crypto';
import type { WebhookConfig, WebhookCounts, WebhookDelivery, WebhookDeliveryState, WebhookEvent, WebhookStore } from '../core/webhook.js';
import type { EventBus } from '../events/bus.js';
import type { OrganismEvent } from '../events/types.js';
import type { Logger } from '../util/logger.js';
import { signWebhook, WebhookSecretError, webhookKey } from '../util/webhook-signature.js';

/** Deliveries one claim takes (and sends at once). */
const BATCH = 20;
/** How often the store is asked for due deliveries (each enqueue here also wakes the sender). */
const POLL_MS = 500;
/** Delivered and failed deliveries are kept this long. */
const RETAIN_MS = 7 * 86_400_000;

/** One webhook as the API and the console show it (the URL without its query string, which may hold a token). */
export interface WebhookView {
  readonly name: string;
  readonly url: string;
  readonly events: readonly WebhookEvent[];
  readonly counts: WebhookCounts;
  /** The secret's variable is unset or not a `whsec_` secret: deliveries fail until it is fixed. */
  readonly secretProblem: string | null;
}

export interface WebhookDeps {
  readonly store: WebhookStore;
  readonly bus: EventBus;
  /** The `webhooks:` of organism.yaml (read at each use: a reload changes them). */
  readonly configured: () => readonly WebhookConfig[];
  /** This process's id: the holder of the leases it takes. */
  readonly owner: string;
  readonly logger: Logger;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
}

/**
 * Signed outbound webhooks. Events this process emits (never those relayed from other processes,
 * which their own process journals) become deliveries in the store, one per subscribed webhook,
 * with an id derived from the event (a repeated event is stored once). A sender loop, off the
 * pump's path, claims due deliveries with a lease, signs and POSTs each, and marks it delivered
 * on a 2xx, else schedules another try with exponential backoff (failed for good after the
 * webhook's max attempts).
 */
export class Webhooks {
  private readonly now: () => number;
  private readonly env: NodeJS.ProcessEnv;
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private again = false;
  /** Enqueues under way (awaited by stop, so that an event heard just before is journaled). */
  private readonly writes = new Set<Promise<unknown>>();
  private lastPrune = 0;
  /** Failed rounds, told once until one succeeds. */
  private readonly trouble: Trouble;
  /** Aborts the sends under way when the process stops (their leases run out; another process, or the next start, sends them). */
  private aborter = new AbortController();

  constructor(private readonly deps: WebhookDeps) {
    this.now = deps.now ?? Date.now;
    this.trouble = new Trouble(deps.logger, 'webhook sender failed; retrying', 'webhook sender works again');
    this.env = deps.env ?? process.env;
  }

  start(): void {
    this.stopped = false;
    this.aborter = new AbortController();
    this.unsubscribe = this.deps.bus.on((event) => this.hear(event));
    for (const w of this.deps.configured()) {
      const problem = this.secretProblem(w);
      if (problem) this.deps.logger.warn({ webhook: w.name }, `webhook ${w.name}: ${problem}; its deliveries fail until it is set`);
    }
    this.wake(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.aborter.abort();
    await Promise.allSettled([...this.writes]);
    await this.running;
  }

  /** Journals `event` for every webhook subscribed to it; `key` identifies the occurrence (a repeat is stored once). */
  emit(event: WebhookEvent, key: string, data: Readonly<Record<string, unknown>>): void {
    const subscribed = this.deps.configured().filter((w) => w.events.includes(event));
    if (subscribed.length === 0) return;
    const at = this.now();
    const body = JSON.stringify({ type: event, timestamp: new Date(at).toISOString(), data });
    for (const w of subscribed) {
      const id = `msg_${createHash('sha256').update(`${w.name}\0${event}\0${key}`).digest('base64url').slice(0, 27)}`;
      const write = this.deps.store
        .enqueue({ id, webhook: w.name, event, body, createdAt: at })
        .then((added) => {
          if (added) this.wake(0);
        })
        .catch((err: unknown) => this.deps.logger.error({ err, webhook: w.name, event }, 'journaling a webhook delivery failed'))
        .finally(() => this.writes.delete(write));
      this.writes.add(write);
    }
  }

  async views(): Promise<WebhookView[]> {
    const counts = await this.deps.store.counts();
    return this.deps.configured().map((w) => ({
      name: w.name,
      url: withoutQuery(w.url),
      events: w.events,
      counts: counts[w.name] ?? { pending: 0, delivered: 0, failed: 0 },
      secretProblem: this.secretProblem(w),
    }));
  }

  deliveries(query: { webhook?: string; state?: WebhookDeliveryState; limit: number }): Promise<WebhookDelivery[]> {
    return this.deps.store.recent(query);
  }

  private secretProblem(w: WebhookConfig): string | null {
    const secret = this.env[w.secretEnv];
    if (!secret) return `its secret variable ${w.secretEnv} is unset`;
    try {
      webhookKey(secret);
      return null;
    } catch (err) {
      return `${w.secretEnv}: ${(err as Error).message}`;
    }
  }

  private hear(event: OrganismEvent): void {
    switch (event.type) {
      case 'thread_updated': {
        const t = event.thread;
        const name = t.status === 'completed' ? 'thread_completed' : t.status === 'error' ? 'thread_failed' : t.status === 'killed' ? 'thread_killed' : null;
        if (name) this.emit(name, `${t.id}:${t.status}:${t.messageCount}`, { ...t });
        return;
      }
      case 'inbox_opened': {
        const { id, kind, threadId, messageId, listener, from, payloadType, payload, createdAt, expiresAt } = event.item;
        this.emit('inbox_opened', id, { id, kind, threadId, messageId, listener, from, payloadType, payload, createdAt, expiresAt });
        return;
      }
      case 'inbox_closed':
        this.emit('inbox_closed', event.closed.id, { ...event.closed });
        return;
      case 'budget_warning': {
        const { type: _t, ...data } = event;
        this.emit('budget_warning', `${event.threadId}:${event.threshold}`, data);
        return;
      }
      case 'journal_failed': {
        const m = event.message;
        const data = { threadId: m.threadId, messageId: m.id, from: m.from, to: m.to, payloadType: m.payloadType, reason: event.reason, error: event.error };
        if (event.reason === 'budget_exhausted') this.emit('budget_exhausted', m.id, data);
        this.emit('delivery_failed', m.id, data);
        return;
      }
      default: {
        // Events other parts of the runtime add later (loop_detected) pass through as they come.
        const type = (event as { type: string }).type;
        if (type === 'loop_detected') {
          const { type: _t, ...data } = event as unknown as Record<string, unknown>;
          this.emit('loop_detected', createHash('sha256').update(JSON.stringify(data)).digest('hex'), data);
        }
      }
    }
  }

  private wake(delayMs: number): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sendDue()
        .then(
          (more) => {
            this.trouble.ok();
            return more;
          },
          (err: unknown) => {
            this.trouble.fail(err);
            return false;
          },
        )
        .then((more) => {
          this.running = null;
          const now = this.again || more === true;
          this.again = false;
          this.wake(now ? 0 : POLL_MS);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  /** Sends one batch of due deliveries; true when the batch was full (more may be due). */
  private async sendDue(): Promise<boolean> {
    const now = this.now();
    if (now - this.lastPrune > 3_600_000) {
      this.lastPrune = now;
      await this.deps.store.prune(now - RETAIN_MS);
    }
    const configured = new Map(this.deps.configured().map((w) => [w.name, w]));
    // No webhook configured: nothing to send, and the store is left alone (no poll of an idle database).
    if (configured.size === 0) return false;
    const leaseMs = Math.max(...[...configured.values()].map((w) => w.timeoutSeconds * 1000), 10_000) + 30_000;
    const batch = await this.deps.store.claim(this.deps.owner, now, leaseMs, BATCH);
    await Promise.all(batch.map((d) => this.send(d, configured.get(d.webhook) ?? null)));
    return batch.length === BATCH;
  }

  private async send(d: WebhookDelivery, w: WebhookConfig | null): Promise<void> {
    const { store, owner } = this.deps;
    if (!w) {
      await store.attemptFailed(d.id, owner, { nextAttemptAt: this.now(), status: null, error: `webhook ${d.webhook} is no longer configured`, final: true });
      return;
    }
    let status: number | null = null;
    let error: string;
    try {
      const key = webhookKey(this.env[w.secretEnv] ?? '');
      const timestamp = Math.floor(this.now() / 1000);
      const res = await fetch(w.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'organism-webhooks',
          'webhook-id': d.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(key, d.id, timestamp, d.body),
        },
        body: d.body,
        signal: AbortSignal.any([AbortSignal.timeout(w.timeoutSeconds * 1000), this.aborter.signal]),
        redirect: 'manual',
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) {
        await store.delivered(d.id, owner, this.now(), res.status);
        return;
      }
      error = `HTTP ${res.status}`;
    } catch (err) {
      // Stopping: not an attempt of the receiver's; the lease runs out and it is sent again.
      if (this.aborter.signal.aborted) return;
      error = err instanceof WebhookSecretError ? (this.secretProblem(w) ?? err.message) : describeFailure(err);
    }
    const attempts = d.attempts + 1;
    const final = attempts >= w.maxAttempts;
    const wait = Math.min(w.initialBackoffSeconds * 2 ** (attempts - 1), w.maxBackoffSeconds) * 1000;
    await store.attemptFailed(d.id, owner, { nextAttemptAt: this.now() + wait, status, error, final });
    const log = { webhook: w.name, id: d.id, event: d.event, attempts, status, error };
    if (final) this.deps.logger.error(log, `webhook delivery failed for good after ${attempts} attempts`);
    else this.deps.logger.warn(log, 'webhook delivery failed; retrying');
  }
}

function describeFailure(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return 'timed out';
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

function withoutQuery(url: string): string {
  try {
    const u = new URL(url);
    u.search = '';
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}
