/**
 * Text every store must keep or refuse the same way, injected during every phase of both
 * modes (the agreed rule of issue 23): a NUL or a lone UTF-16 surrogate in a payload string,
 * a metadata value or a key is refused 422 naming the field; RTL marks and 4-byte characters
 * are accepted and read back unchanged. A 200 for text that must be refused is a violation (the
 * message was accepted, so it also joins the durability checks); so is a lossy read-back.
 *
 * Keys are probed for refusal only: the inject API has no free-form keys (payload fields are
 * declared, metadata takes orgId and userId), so no key can be kept, whatever its characters.
 */
import type { Api } from './api.js';
import type { CheckName } from './checks.js';
import { sleep, type Random } from './random.js';
import type { Accepted, Injector } from './workload.js';

const MUST_REFUSE = { NUL: '\u0000', 'a lone high surrogate': '\uD83D', 'a lone low surrogate': '\uDE00' } as const;
const MUST_KEEP = { 'an RTL mark': '\u200F', 'an RTL override': '\u202E', 'an emoji (4 bytes in UTF-8)': '\u{1F600}', 'a musical symbol (4 bytes)': '\u{1D11E}' } as const;

interface TextCase {
  readonly name: string;
  readonly keep: boolean;
  /** What a 422 must name (the field, or the key's printable part). */
  readonly names: string;
  readonly body: (orgId: string) => { to: string; payload: { Job: Record<string, string> }; metadata: Record<string, string> };
  readonly text: string;
  readonly userId?: string;
}

function cases(): TextCase[] {
  const out: TextCase[] = [];
  const job = (text: string, extra: Record<string, string> = {}) => ({ Job: { text, mode: 'chain', ...extra } });
  for (const [what, ch] of Object.entries(MUST_REFUSE)) {
    const text = `text ${ch} probe`;
    out.push({ name: `${what} in payload.Job.text`, keep: false, names: 'text', text, body: (orgId) => ({ to: 'intake', payload: job(text), metadata: { orgId } }) });
    out.push({
      name: `${what} in metadata.orgId`,
      keep: false,
      names: 'orgId',
      text: 'probe',
      body: (orgId) => ({ to: 'intake', payload: job('probe'), metadata: { orgId: `${orgId}${ch}` } }),
    });
    out.push({
      name: `${what} in metadata.userId`,
      keep: false,
      names: 'userId',
      text: 'probe',
      userId: `user${ch}`,
      body: (orgId) => ({ to: 'intake', payload: job('probe'), metadata: { orgId, userId: `user${ch}` } }),
    });
    out.push({
      name: `${what} in a payload key`,
      keep: false,
      names: 'chaoskey',
      text: 'probe',
      body: (orgId) => ({ to: 'intake', payload: job('probe', { [`chaoskey${ch}`]: 'v' }), metadata: { orgId } }),
    });
    out.push({
      name: `${what} in a metadata key`,
      keep: false,
      names: 'chaoskey',
      text: 'probe',
      body: (orgId) => ({ to: 'intake', payload: job('probe'), metadata: { orgId, [`chaoskey${ch}`]: 'v' } }),
    });
  }
  for (const [what, ch] of Object.entries(MUST_KEEP)) {
    const text = `text ${ch} kept ${ch}`;
    out.push({ name: `${what} in payload.Job.text`, keep: true, names: 'text', text, body: (orgId) => ({ to: 'intake', payload: job(text), metadata: { orgId } }) });
    const userId = `user ${ch}`;
    out.push({
      name: `${what} in metadata.userId`,
      keep: true,
      names: 'userId',
      text: 'probe',
      userId,
      body: (orgId) => ({ to: 'intake', payload: job('probe'), metadata: { orgId, userId } }),
    });
  }
  return out;
}

const ALL = cases();

/** `all` (the default), `kept` (only text that must be kept: to see a run's other checks on code that still accepts NUL), `off`. */
export type TextProbes = 'all' | 'kept' | 'off';

interface Kept {
  readonly c: TextCase;
  readonly accepted: Accepted;
  readonly orgId: string;
}

interface EntryView {
  readonly id: string;
  readonly to: string;
  readonly payload: Record<string, unknown>;
  readonly metadata: Record<string, string>;
}

const show = (s: string) => JSON.stringify(s);

/** One cycle's probes: sent while the phase's fault happens, judged as answered, read back after. */
export class TextProbe {
  private pending: TextCase[] = [];
  private readonly kept: Kept[] = [];
  private running: Promise<void> | null = null;
  private stopping = false;
  /**
   * Threads accepted under another orgId than the cycle's (an orgId that had to be refused):
   * the per-cycle checks read usage by the cycle's orgId, so these are checked at the end only.
   */
  readonly offScope = new Set<string>();

  constructor(
    private readonly api: Api,
    private readonly injector: Injector,
    private readonly rng: Random,
    private readonly report: (check: CheckName, detail: string) => void,
    private readonly which: TextProbes = 'all',
  ) {}

  /** Starts sending this cycle's probes (every case, in random order) until stop(). */
  start(): void {
    this.pending = this.rng.shuffle(ALL.filter((c) => this.which === 'all' || (this.which === 'kept' && c.keep)));
    this.kept.length = 0;
    this.stopping = false;
    this.running = (async () => {
      while (!this.stopping && this.pending.length) {
        await this.attempt(this.pending[0]!);
        await sleep(this.rng.int(20, 80));
      }
    })();
  }

  /** Stops sending during the fault; what was not answered yet is sent now (the organism serves again). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    const t0 = performance.now();
    while (this.pending.length && performance.now() - t0 < 30_000) {
      if (!(await this.attempt(this.pending[0]!))) await sleep(200);
    }
    for (const c of this.pending) this.report('text-kept-or-refused', `${c.name}: no answer but 503s or transport errors for 30 s after the fault`);
  }

  /** One send of a case; true once the case got its verdict (a 200 or a 4xx/5xx other than 503/507). */
  private async attempt(c: TextCase): Promise<boolean> {
    const body = c.body(this.injector.org);
    const orgId = body.metadata['orgId']!;
    const { accepted, answer } = await this.injector.send('text', body, 20_000, 422);
    if (!answer.ok || answer.status === 503 || answer.status === 507) {
      // Unanswered or refused for now (a fault): sent again later. Others are judged.
      this.pending.push(this.pending.shift()!);
      return false;
    }
    this.pending.shift();
    const where = `cycle ${this.injector.cycleNo} (${this.injector.context}): ${c.name}`;
    const detail = JSON.stringify(answer.body).slice(0, 300);
    if (c.keep) {
      if (accepted) this.kept.push({ c, accepted, orgId });
      else this.report('text-kept-or-refused', `${where} must be accepted and kept, answered ${answer.status} ${detail}`);
    } else if (accepted) {
      this.report('text-kept-or-refused', `${where} must be refused 422, was accepted (200, message ${accepted.messageId})`);
      this.kept.push({ c, accepted, orgId });
      if (orgId !== this.injector.org) this.offScope.add(accepted.threadId);
    } else if (answer.status !== 422) {
      this.report('text-kept-or-refused', `${where} must be refused 422, answered ${answer.status} ${detail}`);
    } else if (!JSON.stringify(answer.body).includes(c.names)) {
      this.report('text-kept-or-refused', `${where}: the 422 does not name the field (${c.names}): ${detail}`);
    }
    return true;
  }

  /** After the cycle settled: what was accepted reads back exactly as sent. */
  async verify(): Promise<void> {
    for (const k of this.kept) {
      const where = `cycle ${k.accepted.cycle}: ${k.c.name} (message ${k.accepted.messageId})`;
      const page = await this.api.request('GET', `/api/v1/journal?threadId=${encodeURIComponent(k.accepted.threadId)}&limit=100`, undefined, 15_000);
      if (!page.ok || page.status !== 200) {
        this.report('text-kept-or-refused', `${where}: reading its thread answered ${page.ok ? page.status : page.error}`);
        continue;
      }
      const entries = (page.body as { entries: EntryView[] }).entries;
      const root = entries.find((e) => e.id === k.accepted.messageId);
      const next = entries.find((e) => e.to === 'thinker');
      const lost: string[] = [];
      if (!root) lost.push('the root entry is missing');
      else if (root.payload['text'] !== k.c.text) lost.push(`payload.text reads back ${show(String(root.payload['text']))}, sent ${show(k.c.text)}`);
      // intake passes the text on unchanged: the worker's outcome write must keep it too.
      if (next && next.payload['text'] !== k.c.text) lost.push(`thinker's payload.text reads back ${show(String(next.payload['text']))}, sent ${show(k.c.text)}`);
      for (const e of entries) {
        if (e.metadata['orgId'] !== k.orgId) lost.push(`${e.to} entry ${e.id}: metadata.orgId reads back ${show(String(e.metadata['orgId']))}, sent ${show(k.orgId)}`);
        if (k.c.userId !== undefined && e.metadata['userId'] !== k.c.userId)
          lost.push(`${e.to} entry ${e.id}: metadata.userId reads back ${show(String(e.metadata['userId']))}, sent ${show(k.c.userId)}`);
      }
      if (lost.length) this.report('text-kept-or-refused', `${where}: not read back as sent: ${lost.slice(0, 3).join('; ')}`);
    }
  }
}
