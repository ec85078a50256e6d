/**
 * Child process of the crash-safety test: a durable organism under a multi-hop workload
 * (code handler -> mock LLM agent -> code handler with a side effect). The parent SIGKILLs
 * it at random instants and restarts it; `finish` mode only recovers and drains.
 *
 *   node --import tsx test/crash/worker.ts <dataDir> work|finish [<postgres url> <schema>]
 *
 * With a PostgreSQL URL the organism's store is that database's schema (the data directory
 * then only holds the test's logs).
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Organism } from '../../src/organism/organism.js';
import { send } from '../../src/core/handler.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { listener, loaded, mockProvider } from '../pump/harness.js';
import { EFFECTS_FILE, EffectLog } from './effects.js';

const [dataDir, mode, pgUrl, pgSchema] = process.argv.slice(2) as [string, 'work' | 'finish', string?, string?];
const effects = new EffectLog(path.join(dataDir, EFFECTS_FILE));

const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 4));
const storage = pgUrl ? await openPostgresStorage({ url: pgUrl, ...(pgSchema ? { schema: pgSchema } : {}) }) : openSqliteStorage({ dataDir });

/** Records the run, and a violation when the journal already had this delivery ACKED. */
async function audit(name: string, messageId: string, attempt: number) {
  const entry = await storage.journal.get(messageId);
  effects.run(name, messageId, attempt, entry?.state === 'ACKED');
}

const organism = new Organism(
  loaded(
    [
      listener('start', {
        peers: ['thinker'],
        handler: async (p, ctx) => {
          await audit('start', ctx.messageId, ctx.attempt);
          await jitter();
          return send('thinker', { text: `${p['text']}` });
        },
      }),
      listener('thinker', { handler: null, agent: true, peers: ['sink'], prompt: 'Forward the text to sink.', model: 'mock-1' }),
      listener('sink', {
        handler: async (_p, ctx) => {
          await audit('sink', ctx.messageId, ctx.attempt);
          await jitter();
          effects.applyEffect(ctx.messageId, ctx.threadId); // deduplicated by ctx.messageId
        },
      }),
    ],
    {
      llm: {
        providers: [mockProvider({ thinker: ['<send to="sink"><Text><text>{{text}}</text></Text></send>'] }, { mockLatencyMs: 2 })],
        pricing: { 'mock-': { prompt: 1, completion: 2, cacheRead: null, cacheWrite: null } },
      },
      journal: { maxAttempts: 1000, retainDays: 7, failedRetainDays: 30 },
    },
  ),
  { storage },
);

const injectedLog = path.join(dataDir, 'injected.log');
const report = await organism.start();
appendFileSync(path.join(dataDir, 'recoveries.log'), `${JSON.stringify(report)}\n`);
process.stdout.write('ready\n');

if (mode === 'work') {
  let next = existsSync(injectedLog) ? readFileSync(injectedLog, 'utf8').split('\n').filter(Boolean).length : 0;
  for (;;) {
    // Offer load a little faster than a few handlers can take, without an unbounded backlog.
    while (organism.queued > 40) await new Promise((r) => setTimeout(r, 2));
    const batch = Array.from({ length: 4 }, () => next++);
    await Promise.all(
      batch.map(async (i) => {
        const { threadId, messageId } = await organism.inject('start', { text: `job-${i}` }, { waitMs: 10_000, metadata: { orgId: 'acme' } });
        // Written only after inject returned: every logged message must survive any kill.
        appendFileSync(injectedLog, `${JSON.stringify({ i, threadId, messageId })}\n`);
      }),
    );
  }
} else {
  // Drain everything recovered, then report.
  for (;;) {
    const stats = await storage.journal.stats();
    if (stats.counts.PENDING === 0 && stats.counts.DISPATCHED === 0 && organism.activeThreads === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await organism.stop();
  effects.close();
  process.stdout.write('drained\n');
  process.exit(0);
}
