import type { WebhookCounts, WebhookDelivery, WebhookDeliveryState, WebhookStore } from '../../core/webhook.js';

interface Row extends WebhookDelivery {
  readonly leaseOwner: string | null;
  readonly leaseUntil: number;
}

/** Webhook deliveries of an organism without a data directory (lost with the process). */
export class MemoryWebhookStore implements WebhookStore {
  private readonly rows = new Map<string, Row>();

  async enqueue(d: { id: string; webhook: string; event: string; body: string; createdAt: number }): Promise<boolean> {
    if (this.rows.has(d.id)) return false;
    this.rows.set(d.id, { ...d, state: 'pending', attempts: 0, nextAttemptAt: d.createdAt, deliveredAt: null, lastStatus: null, lastError: null, leaseOwner: null, leaseUntil: 0 });
    return true;
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const due = [...this.rows.values()]
      .filter((r) => r.state === 'pending' && r.nextAttemptAt <= now && (r.leaseOwner === null || r.leaseUntil <= now))
      .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)
      .slice(0, limit);
    for (const r of due) this.rows.set(r.id, { ...r, leaseOwner: owner, leaseUntil: now + leaseMs });
    return due.map(strip);
  }

  async delivered(id: string, owner: string, now: number, status: number): Promise<void> {
    const r = this.rows.get(id);
    if (!r || r.leaseOwner !== owner || r.state !== 'pending') return;
    this.rows.set(id, { ...r, state: 'delivered', attempts: r.attempts + 1, deliveredAt: now, lastStatus: status, lastError: null, leaseOwner: null, leaseUntil: 0 });
  }

  async attemptFailed(id: string, owner: string, result: { nextAttemptAt: number; status: number | null; error: string; final: boolean }): Promise<void> {
    const r = this.rows.get(id);
    if (!r || r.leaseOwner !== owner || r.state !== 'pending') return;
    this.rows.set(id, {
      ...r,
      state: result.final ? 'failed' : 'pending',
      attempts: r.attempts + 1,
      nextAttemptAt: result.nextAttemptAt,
      lastStatus: result.status,
      lastError: result.error,
      leaseOwner: null,
      leaseUntil: 0,
    });
  }

  async recent(query: { webhook?: string; state?: WebhookDeliveryState; limit: number }): Promise<WebhookDelivery[]> {
    return [...this.rows.values()]
      .filter((r) => (query.webhook === undefined || r.webhook === query.webhook) && (query.state === undefined || r.state === query.state))
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .slice(0, query.limit)
      .map(strip);
  }

  async counts(): Promise<Record<string, WebhookCounts>> {
    const out: Record<string, { pending: number; delivered: number; failed: number }> = {};
    for (const r of this.rows.values()) {
      const c = (out[r.webhook] ??= { pending: 0, delivered: 0, failed: 0 });
      c[r.state]++;
    }
    return out;
  }

  async prune(before: number): Promise<void> {
    for (const r of [...this.rows.values()]) if (r.state !== 'pending' && r.createdAt < before) this.rows.delete(r.id);
  }
}

function strip(r: Row): WebhookDelivery {
  const { leaseOwner: _o, leaseUntil: _u, ...d } = r;
  return d;
}
