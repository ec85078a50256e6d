import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { eachBackend, type Place } from '../store/contract/backends.js';
import { checkDurability } from './checks.js';
import { EFFECTS_FILE, readEffects } from './effects.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? 20);
const WORKER = path.join(import.meta.dirname, 'worker.ts');

function start(dataDir: string, mode: 'work' | 'finish', place: Place): { child: ChildProcess; ready: Promise<void>; exited: Promise<number | null>; output: () => string } {
  const store = 'url' in place.location ? [place.location.url, place.location.schema] : [];
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, dataDir, mode, ...store], { stdio: ['ignore', 'pipe', 'pipe'] });
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

eachBackend('crash safety (SIGKILL at random instants)', (backend) => {
  it(`loses nothing acknowledged and repeats no finished work across ${KILLS} kills`, async () => {
    const place = backend.place();
    // The test's logs; with SQLite also the organism's data directory.
    const dataDir = 'dataDir' in place.location ? place.location.dataDir : mkdtempSync(path.join(os.tmpdir(), 'organism-crash-'));
    for (let k = 0; k < KILLS; k++) {
      const w = start(dataDir, 'work', place);
      await w.ready;
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 300));
      w.child.kill('SIGKILL');
      await w.exited;
    }
    const f = start(dataDir, 'finish', place);
    await f.ready;
    expect(await f.exited, f.output()).toBe(0);

    // A kill may cut a line short, and the next boot appends right after it: every complete
    // record is read wherever it starts, a cut one is skipped.
    const injected = [...readFileSync(path.join(dataDir, 'injected.log'), 'utf8').matchAll(/\{"i":\d+,"threadId":"[^"]+","messageId":"[^"]+"\}/g)].map(
      (m) => JSON.parse(m[0]) as { i: number; threadId: string; messageId: string },
    );
    expect(injected.length).toBeGreaterThan(KILLS);
    // The kills really interrupted work: later boots found journaled messages to deliver.
    const recoveries = readFileSync(path.join(dataDir, 'recoveries.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { pending: number; redelivered: number });
    expect(recoveries.reduce((n, r) => n + r.pending + r.redelivered, 0)).toBeGreaterThan(0);

    const storage = await place.open();
    try {
      // Every message whose inject returned survived and its whole chain completed, with its
      // side effect exactly once; no handler ran again for a delivery the journal had ACKED;
      // one persisted usage event per acknowledged LLM delivery, none twice, none missing, and
      // the billing rollup equals the sum of the events.
      const violations = await checkDurability({
        source: storage,
        effects: readEffects(path.join(dataDir, EFFECTS_FILE)),
        expectations: injected.map(({ threadId, messageId }) => ({ threadId, messageId, root: 'ACKED', threadStatus: 'completed', effects: 1 })),
        oneCallAgents: ['thinker'],
        ceiling: () => 100_000,
      });
      expect(violations).toEqual([]);
      const stats = await storage.journal.stats();
      expect(stats.counts.FAILED).toBe(0);
      // Also the deliveries of injects cut off before they were logged: none without its event.
      const thinkerAcked = await storage.journal.list({ agent: 'thinker', state: 'ACKED', limit: 1_000_000, offset: 0 });
      const events = await storage.usage.history({ limit: 1, offset: 0 });
      expect(events.total).toBe(thinkerAcked.items.filter((e) => e.message.to === 'thinker').length);
      const billing = await storage.usage.billing({});
      expect(billing.byOrg['acme']?.requestCount).toBe(events.total);
    } finally {
      await storage.close();
    }
  }, 300_000);
});
