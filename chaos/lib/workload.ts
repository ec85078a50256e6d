/**
 * The workload: injects over HTTP, as a client would, and what each accepted message must
 * have become once the organism is quiet again. Every answer is classified; the ones the
 * contract forbids are violations at once (a refused connection while the supervisor owns the
 * port, a 5xx other than 503/507, a refusal without Retry-After).
 */
import type { Expectation } from '../../test/crash/checks.js';
import type { Answer, Api } from './api.js';
import { ATTACK_NAMES, type Attack } from './hostile-llm.js';
import type { Random } from './random.js';
import { sleep } from './random.js';

export type Kind = 'chain' | 'fail' | 'budget' | 'held' | 'huge' | 'text' | 'ordered' | 'ask' | `hostile:${Attack}`;

export interface Accepted {
  readonly kind: Kind;
  readonly threadId: string;
  readonly messageId: string;
  readonly cycle: number;
}

/**
 * Most injects run the three-hop chain; some fail on purpose, some run a thread out of budget,
 * some ask a person (the human listener the harness answers: chaos/lib/inbox.ts).
 */
export const STEADY_MIX = { chain: 80, fail: 8, budget: 12, ask: 15 } as const;

/** Most hostile replies are bounded by the reply caps; this is how many sends one reply may queue. */
export const MAX_MESSAGES_PER_REPLY = 20;

export function expectationOf(a: Accepted): Expectation {
  const base = { threadId: a.threadId, messageId: a.messageId };
  switch (a.kind) {
    case 'fail':
      return { ...base, root: { failed: 'handler_error' }, threadStatus: 'error', effects: 0, allowedFailures: ['unknown_target'] };
    case 'budget':
      return { ...base, root: 'ACKED', threadStatus: 'error', effects: 0, allowedFailures: ['budget_exhausted'], requiredFailure: 'budget_exhausted' };
    case 'ordered':
      return { ...base, root: 'ACKED', threadStatus: 'completed', effects: 0 };
    case 'ask':
      throw new Error('an ask thread ends as the harness closed its ask: HumanDesk.expectation (chaos/lib/inbox.ts)');
    case 'chain':
    case 'text':
    case 'held':
    case 'huge':
      return { ...base, root: 'ACKED', threadStatus: 'completed', effects: 1 };
    default:
      // A hostile reply is refused (the delivery fails with its reason) or bounded by the caps.
      return { ...base, root: 'ACKED', threadStatus: ['completed', 'error'], effects: { max: MAX_MESSAGES_PER_REPLY }, allowedFailures: ['handler_error', 'unknown_target'] };
  }
}

/** Text of a ball: long enough that ping-pong runs the thread's budget out in ~20 calls. */
const BALL = 'ball '.repeat(80);
export const HUGE_TEXT_CHARS = 70_000;

function injectBody(kind: Kind, seq: number, orgId: string): unknown {
  const text =
    kind === 'budget' ? `${BALL}${seq}` : kind === 'huge' ? `${seq} ${'h'.repeat(HUGE_TEXT_CHARS)}` : kind.startsWith('hostile:') ? `attack:${kind.slice(8)} ${seq}` : `job-${seq}`;
  const mode = kind === 'held' || kind === 'huge' ? 'chain' : kind.startsWith('hostile:') ? 'hostile' : kind;
  return { to: 'intake', payload: { Job: { text, mode } }, metadata: { orgId } };
}

export type Report = (check: string, detail: string) => void;

export class Injector {
  /** Accepted during the current cycle. */
  accepted: Accepted[] = [];
  /** Threads of messages injected one after another (kind `ordered`), their ids in order; this cycle. */
  ordered = new Map<string, string[]>();
  /** Answers by status or transport error, over the whole run. */
  readonly outcomes: Record<string, number> = {};
  /** Set while nothing is supposed to hold the port (the whole organism was killed). */
  refusalAllowed = false;
  /** What the current fault is, for the details of a violation. */
  context = '';
  private seq = 0;
  private running: Promise<void>[] = [];
  private stopping = false;
  private cycle = 0;
  private orgId = '';

  constructor(
    private readonly api: Api,
    private readonly rng: Random,
    private readonly report: Report,
  ) {}

  begin(cycle: number): void {
    this.cycle = cycle;
    this.orgId = `c${cycle}`;
    this.accepted = [];
    this.ordered = new Map();
  }

  /** Injects steadily from `loops` concurrent clients until stop(). */
  start(loops: number, pick: () => Kind, pauseMs: readonly [number, number]): void {
    this.stopping = false;
    this.running = Array.from({ length: loops }, async () => {
      while (!this.stopping) {
        const kind = pick();
        if (kind === 'ordered') await this.injectOrdered(this.rng.int(3, 6));
        else await this.inject(kind);
        await sleep(this.rng.int(pauseMs[0], pauseMs[1]));
      }
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
    this.running = [];
  }

  /** One inject; the accepted message, or null (refused, or its outcome unknown). */
  async inject(kind: Kind, timeoutMs = 20_000): Promise<Accepted | null> {
    return (await this.send(kind, injectBody(kind, ++this.seq, this.orgId), timeoutMs)).accepted;
  }

  /**
   * `count` messages to `ordered`, one after another into one thread (each inject returns
   * before the next), each handler taking a few ms, so a backlog of the thread builds up.
   * A refused inject ends the thread's sequence (what was accepted keeps its order).
   */
  async injectOrdered(count: number): Promise<void> {
    let threadId: string | undefined;
    for (let seq = 0; seq < count; seq++) {
      const body = { to: 'ordered', payload: { Step: { seq, ms: this.rng.int(5, 40) } }, metadata: { orgId: this.orgId }, ...(threadId ? { threadId } : {}) };
      const { accepted } = await this.send('ordered', body);
      if (!accepted) return;
      threadId = accepted.threadId;
      const ids = this.ordered.get(threadId) ?? [];
      ids.push(accepted.messageId);
      this.ordered.set(threadId, ids);
    }
  }

  get cycleNo(): number {
    return this.cycle;
  }

  /** The current cycle's orgId (the metadata of its injects). */
  get org(): string {
    return this.orgId;
  }

  /**
   * Posts one inject body and classifies the answer; a 200 is accepted (must not be lost) as
   * `kind`. `refusal`: a 4xx the caller judges itself (not an inject-answers violation).
   */
  async send(kind: Kind, body: unknown, timeoutMs = 20_000, refusal?: number): Promise<{ accepted: Accepted | null; answer: Answer }> {
    const a = await this.api.request('POST', '/api/v1/inject', body, timeoutMs);
    const key = a.ok ? String(a.status) : a.error;
    this.outcomes[key] = (this.outcomes[key] ?? 0) + 1;
    if (a.ok && a.status === 200) {
      const { threadId, messageId } = a.body as { threadId: string; messageId: string };
      const accepted = { kind, threadId, messageId, cycle: this.cycle };
      this.accepted.push(accepted);
      return { accepted, answer: a };
    }
    const where = `cycle ${this.cycle} (${this.context}), ${kind} inject`;
    if (!a.ok) {
      if (a.error === 'ECONNREFUSED' && !this.refusalAllowed) this.report('no-refused-connection', `${where}: connection refused while the supervisor was running`);
      return { accepted: null, answer: a };
    }
    const detail = JSON.stringify(a.body).slice(0, 300);
    if (a.status === 503 || a.status === 507) {
      if (!a.headers.get('retry-after')) this.report('clear-refusals', `${where}: ${a.status} without Retry-After: ${detail}`);
    } else if (a.status >= 500) {
      this.report('no-5xx', `${where}: ${a.status} ${detail}`);
    } else if (a.status !== refusal) {
      this.report('inject-answers', `${where}: unexpected ${a.status} ${detail}`);
    }
    return { accepted: null, answer: a };
  }
}

export const HOSTILE_KINDS: readonly Kind[] = ATTACK_NAMES.map((a) => `hostile:${a}` as const);
