/**
 * People in the loop: the harness plays the `desk` team (handler: builtin:human of
 * chaos/organism/organism.yaml). Threads of kind `ask` make intake ask it; while the faults run,
 * the harness lists `GET /api/v1/inbox` at random moments and answers (a Verdict to ledger) or
 * rejects some of the open asks, drawn from the run's seeded random source; before a cycle is
 * checked it closes every ask still open. Then each ask must have been closed exactly once, as
 * the harness decided, its answer's continuation run once, and its thread's status agree.
 *
 * Only the harness closes asks (desk has no timeout and no phase kills threads), so an answer
 * whose outcome was lost in a fault (a timeout, a connection cut) is sent again: a 409 then
 * says the first one landed, which the journal must confirm.
 */
import type { Expectation, DurabilitySource } from '../../test/crash/checks.js';
import type { Answer, Api } from './api.js';
import type { CheckName } from './checks.js';
import type { Random } from './random.js';
import { sleep } from './random.js';
import type { Accepted } from './workload.js';

export const HUMAN_LISTENER = 'desk';
export const CONTINUATION = 'ledger';
/** The share of closes that are rejections. */
const REJECT_PERCENT = 25;
const PAGE = 100;
/** A lost decision is sent again at the drain up to this many times, this far apart, while the fault lasts. */
const RETRIES = 40;
const RETRY_MS = 250;

type Decision = 'answer' | 'reject';

interface Item {
  readonly id: string;
  readonly threadId: string;
  decision: Decision | null;
  /** 200 answers the harness received for this item (more than one is a violation). */
  oks: number;
  /** A request whose outcome is unknown (transport error, timeout) was sent. */
  unknown: boolean;
  /** A 409 came back (the item was closed already). */
  conflicts: number;
  /** Closed, as far as the harness knows (a 200, or a 409 after an unknown outcome). */
  closed: boolean;
}

interface InboxItem {
  readonly id: string;
  readonly threadId: string;
  readonly listener: string;
}

type Report = (check: CheckName, detail: string) => void;

export class HumanDesk {
  /** What the harness did, over the whole run: item id -> its record. */
  private readonly items = new Map<string, Item>();
  private readonly byThread = new Map<string, Item>();
  private running: Promise<void> | null = null;
  private stopping = false;
  /** Counts for the report: lists, answers, rejections, 409s, lost outcomes, consistency samples. */
  readonly counts: Record<string, number> = {};
  cycle = 0;

  constructor(
    private readonly api: Api,
    private readonly rng: Random,
    private readonly report: Report,
  ) {}

  private count(what: string): void {
    this.counts[what] = (this.counts[what] ?? 0) + 1;
  }

  /** Answers or rejects some open asks at random moments until stop(). */
  start(): void {
    this.stopping = false;
    this.running = (async () => {
      while (!this.stopping) {
        await sleep(this.rng.int(100, 600));
        if (this.stopping) break;
        if (this.rng.int(0, 3) === 0) await this.sampleConsistency();
        // Few at a time: many asks stay open through the fault and are closed after it.
        await this.sweep(this.rng.int(0, 2));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    this.running = null;
  }

  /** Closes every open ask (before a cycle is checked); the number still open after, or null when the inbox could not be read. */
  async drain(): Promise<number | null> {
    const closed = await this.sweep(Number.POSITIVE_INFINITY);
    if (closed === null) return null;
    // Open until the cycle settled: they waited through the cycle's fault.
    this.counts['closed after the fault'] = (this.counts['closed after the fault'] ?? 0) + closed;
    // A decision whose outcome a fault lost may have landed (the ask is then no longer listed):
    // sent again by id, a 409 says it did, a 200 that it had not. Again while the retry itself
    // meets the fault's tail (refused, reset, a 503): one try left such an ask unknown, and the
    // check called it never closed (cycle 5 of seed 20261207, kill-serve).
    for (const rec of this.items.values()) {
      for (let tries = 0; rec.unknown && !rec.closed && tries < RETRIES; tries++) {
        if (tries > 0) await sleep(RETRY_MS);
        await this.close({ id: rec.id, threadId: rec.threadId } as InboxItem);
      }
    }
    const left = await this.list();
    return left === null ? null : left.length;
  }

  /** Open asks of desk, oldest first; null when the inbox cannot be read now (a fault). */
  private async list(): Promise<InboxItem[] | null> {
    const out: InboxItem[] = [];
    for (;;) {
      const a = await this.api.request('GET', `/api/v1/inbox?listener=${HUMAN_LISTENER}&limit=${PAGE}&offset=${out.length}`, undefined, 10_000);
      if (!a.ok || a.status !== 200) return null;
      const page = a.body as { items: InboxItem[]; total: number };
      out.push(...page.items);
      if (page.items.length === 0 || out.length >= page.total) return out;
    }
  }

  /** Closes up to `most` open asks, drawn at random; how many it tried, or null when the inbox could not be read. */
  private async sweep(most: number): Promise<number | null> {
    const open = await this.list();
    if (open === null) return null;
    this.count('inbox listed');
    const chosen = Number.isFinite(most) ? this.rng.shuffle(open).slice(0, most) : open;
    for (const item of chosen) await this.close(item);
    return chosen.length;
  }

  private record(item: InboxItem): Item {
    let rec = this.items.get(item.id);
    if (!rec) {
      rec = { id: item.id, threadId: item.threadId, decision: null, oks: 0, unknown: false, conflicts: 0, closed: false };
      this.items.set(item.id, rec);
      this.byThread.set(item.threadId, rec);
    }
    return rec;
  }

  /** Answers or rejects one listed ask; a retry after a lost outcome keeps the first decision. */
  private async close(item: InboxItem): Promise<void> {
    const rec = this.record(item);
    if (rec.oks > 0) {
      // Listed open after a 200: the answer did not close it.
      this.report('asks-closed-once', `cycle ${this.cycle}: ask ${rec.id} (thread ${rec.threadId}) is listed open after its ${rec.decision} was answered 200`);
    }
    rec.decision ??= this.rng.int(0, 99) < REJECT_PERCENT ? 'reject' : 'answer';
    const a: Answer =
      rec.decision === 'answer'
        ? await this.api.request('POST', `/api/v1/inbox/${rec.id}/answer`, { payload: { text: `verdict on ${rec.id}`, approved: true }, to: CONTINUATION, note: 'chaos' }, 15_000)
        : await this.api.request('POST', `/api/v1/inbox/${rec.id}/reject`, { note: `rejected by the chaos harness in cycle ${this.cycle}` }, 15_000);
    if (!a.ok) {
      this.count(`${rec.decision}: ${a.error}`);
      rec.unknown = true;
      return;
    }
    this.count(`${rec.decision}: ${a.status}`);
    if (a.status === 200) {
      rec.oks++;
      rec.closed = true;
      if (rec.oks > 1) this.report('asks-closed-once', `cycle ${this.cycle}: ask ${rec.id} (thread ${rec.threadId}): a ${rec.decision} answered 200 ${rec.oks} times`);
    } else if (a.status === 409) {
      rec.conflicts++;
      // Expected only when an earlier request's outcome was lost (it landed after all).
      if (!rec.unknown && !rec.closed)
        this.report('asks-closed-once', `cycle ${this.cycle}: ask ${rec.id} (thread ${rec.threadId}) was closed by someone else than the harness: ${JSON.stringify(a.body).slice(0, 200)}`);
      rec.closed = true;
    } else if (a.status >= 500 && a.status !== 503 && a.status !== 507) {
      this.report('no-5xx', `cycle ${this.cycle}: ${rec.decision} of ask ${rec.id}: ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
      rec.unknown = true;
    } else if (a.status !== 503 && a.status !== 507) {
      this.report('inject-answers', `cycle ${this.cycle}: ${rec.decision} of ask ${rec.id}: unexpected ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
    }
  }

  /** Waiting threads, or null when they cannot be read now. */
  private async waitingThreads(): Promise<Set<string> | null> {
    const out = new Set<string>();
    for (let offset = 0; ; offset += PAGE) {
      const a = await this.api.request('GET', `/api/v1/threads?status=waiting&limit=${PAGE}&offset=${offset}`, undefined, 10_000);
      if (!a.ok || a.status !== 200) return null;
      const page = a.body as { threads: Array<{ id: string }>; total: number };
      for (const t of page.threads) out.add(t.id);
      if (page.threads.length === 0 || offset + PAGE >= page.total) return out;
    }
  }

  /**
   * While asks open and close: a thread waiting before the inbox is read has an open ask in it
   * (nothing but this loop closes asks), and an open ask's thread is still waiting after.
   */
  private async sampleConsistency(): Promise<void> {
    const before = await this.waitingThreads();
    const open = before && (await this.list());
    const after = open && (await this.waitingThreads());
    if (!before || !open || !after) return;
    this.count('consistency samples');
    const asking = new Set(open.map((i) => i.threadId));
    for (const t of before) if (!asking.has(t)) this.report('asks-closed-once', `cycle ${this.cycle}: thread ${t} is waiting without an open ask`);
    for (const t of asking) if (!after.has(t)) this.report('asks-closed-once', `cycle ${this.cycle}: thread ${t} has an open ask but is not waiting`);
  }

  /** How an accepted `ask` thread must have ended: as the harness closed its ask. */
  expectation(a: Accepted): Expectation {
    const base = { threadId: a.threadId, messageId: a.messageId };
    if (this.byThread.get(a.threadId)?.decision === 'reject') {
      return { ...base, root: 'ACKED', threadStatus: 'error', effects: 0, allowedFailures: ['rejected'], requiredFailure: 'rejected' };
    }
    // Answered, or never listed (then verify reports it): the answer's continuation ran once.
    return { ...base, root: 'ACKED', threadStatus: 'completed', effects: 1 };
  }

  /**
   * Every ask of these threads was opened, closed exactly once as the harness decided (none
   * still AWAITING, none closed otherwise), and an answered one sent exactly one message on,
   * which was delivered (its side effect is judged by effects-once).
   */
  async verify(source: Pick<DurabilitySource, 'journal'>, threads: readonly Accepted[], where: string): Promise<number> {
    let checked = 0;
    for (const t of threads) {
      const entries = (await source.journal.list({ threadId: t.threadId, limit: 1000, offset: 0, order: 'oldest' })).items;
      const asks = entries.filter((e) => e.message.to === HUMAN_LISTENER);
      const rec = this.byThread.get(t.threadId);
      const say = (detail: string) => this.report('asks-closed-once', `${where}: thread ${t.threadId}: ${detail}`);
      if (asks.length !== 1) {
        say(`${asks.length} asks to ${HUMAN_LISTENER}, expected 1`);
        continue;
      }
      checked++;
      const ask = asks[0]!;
      if (!rec) {
        say(`ask ${ask.message.id} is ${ask.state} but the harness never saw it in the inbox`);
        continue;
      }
      if (rec.id !== ask.message.id) say(`the inbox listed ask ${rec.id}, the journal has ${ask.message.id}`);
      if (rec.oks > 1) say(`ask ${rec.id} was closed ${rec.oks} times with a 200`);
      if (!rec.closed) say(`ask ${rec.id} (${rec.decision ?? 'never tried'}) was never closed: the journal says ${ask.state}`);
      const want = rec.decision === 'reject' ? 'FAILED (rejected)' : 'ACKED';
      const got = ask.state === 'FAILED' ? `FAILED (${ask.failureReason})` : ask.state;
      if (got !== want) say(`ask ${rec.id} is ${got}, the harness's ${rec.decision} expects ${want}`);
      const sent = entries.filter((e) => e.message.from === HUMAN_LISTENER);
      const wantSent = rec.decision === 'answer' ? 1 : 0;
      if (sent.length !== wantSent) say(`${sent.length} messages from ${HUMAN_LISTENER} after its ${rec.decision}, expected ${wantSent}`);
      for (const s of sent) if (s.message.to !== CONTINUATION || s.state !== 'ACKED') say(`the answer ${s.message.id} to ${s.message.to} is ${s.state}`);
    }
    return checked;
  }

  /** Asks the harness knows of that it never closed (none may be left at the end). */
  get stillOpen(): number {
    return [...this.items.values()].filter((r) => !r.closed).length;
  }

  get seen(): number {
    return this.items.size;
  }
}
