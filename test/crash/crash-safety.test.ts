import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStorage } from '../../src/store/index.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? 20);
const WORKER = path.join(import.meta.dirname, 'worker.ts');

function start(dataDir: string, mode: 'work' | 'finish'): { child: ChildProcess; ready: Promise<void>; exited: Promise<number | null>; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, dataDir, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const ready = new Promise<void>((resolve, reject) => {
    const check = () => (out.includes('ready\n') ? resolve() : undefined);
    child.stdout!.on('data', check);
    void exited.then((code) => reject(new Error(`worker exited (${code}) before ready:\n${out}`)));
  });
  return { child, ready, exited, output: () => out };
}

describe('crash safety (SIGKILL at random instants)', () => {
  it(`loses nothing acknowledged and repeats no finished work across ${KILLS} kills`, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-crash-'));
    for (let k = 0; k < KILLS; k++) {
      const w = start(dataDir, 'work');
      await w.ready;
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 300));
      w.child.kill('SIGKILL');
      await w.exited;
    }
    const f = start(dataDir, 'finish');
    await f.ready;
    expect(await f.exited, f.output()).toBe(0);

    const injected = readFileSync(path.join(dataDir, 'injected.log'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{')) // a kill may cut the last line short
      .map((l) => JSON.parse(l) as { i: number; threadId: string; messageId: string });
    expect(injected.length).toBeGreaterThan(KILLS);
    // The kills really interrupted work: later boots found journaled messages to deliver.
    const recoveries = readFileSync(path.join(dataDir, 'recoveries.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { pending: number; redelivered: number });
    expect(recoveries.reduce((n, r) => n + r.pending + r.redelivered, 0)).toBeGreaterThan(0);

    const storage = openSqliteStorage({ dataDir });
    try {
      const effects = new Database(path.join(dataDir, 'effects.db'), { readonly: true });
      // No handler ran again for a delivery the journal had already ACKED.
      expect(effects.prepare('SELECT * FROM violations').all()).toEqual([]);
      const effectsByThread = new Map<string, number>();
      for (const r of effects.prepare('SELECT thread_id AS t, COUNT(*) AS n FROM effects GROUP BY thread_id').all() as Array<{ t: string; n: number }>) {
        effectsByThread.set(r.t, r.n);
      }
      for (const { threadId, messageId } of injected) {
        // Every message whose inject returned survived, and its whole chain completed...
        const root = await storage.journal.get(messageId);
        expect(root?.state, `root ${messageId}`).toBe('ACKED');
        const thread = await storage.threads.get(threadId);
        expect(thread?.status, `thread ${threadId}`).toBe('completed');
        // ...with its side effect exactly once.
        expect(effectsByThread.get(threadId) ?? 0, `effects of ${threadId}`).toBe(1);
      }
      const stats = await storage.journal.stats();
      expect(stats.counts.PENDING + stats.counts.DISPATCHED).toBe(0);
      expect(stats.counts.FAILED).toBe(0);

      // Usage: one persisted event per acknowledged LLM delivery, none twice, none missing,
      // and the billing rollup equals the sum of the events.
      const thinkerAcked = await storage.journal.list({ agent: 'thinker', state: 'ACKED', limit: 1_000_000, offset: 0 });
      const llmDeliveries = thinkerAcked.items.filter((e) => e.message.to === 'thinker');
      const events = await storage.usage.history({ limit: 1_000_000, offset: 0 });
      const byMessage = new Map<string, number>();
      for (const e of events.items) byMessage.set(e.messageId ?? '', (byMessage.get(e.messageId ?? '') ?? 0) + 1);
      for (const d of llmDeliveries) expect(byMessage.get(d.message.id), `usage of ${d.message.id}`).toBe(1);
      expect(events.total).toBe(llmDeliveries.length);
      const billing = await storage.usage.billing({});
      expect(billing.requestCount).toBe(events.total);
      expect(billing.totalTokens).toBe(events.items.reduce((n, e) => n + e.totalTokens, 0));
      expect(billing.byOrg['acme']?.requestCount).toBe(events.total);
      effects.close();
    } finally {
      storage.close();
    }
  }, 300_000);
});
