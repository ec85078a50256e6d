/**
 * Scenario 1: the control plane over HTTP. The demo organism (durable storage, auth on) and a
 * bare node:http hello-world each run in their own child process; autocannon (100
 * connections) runs here. Rounds interleave the four targets, rotating their order.
 */
import { benchFile, startServer, type RunningServer } from '../lib/child.js';
import { load, type LoadResult } from '../lib/http-load.js';
import { atLeast, atMost, row, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { OrganismServerInfo, OrganismServerInput } from '../servers/organism-http.js';

type Target = 'bare' | 'agents' | 'usage' | 'messages';
const PATHS: Record<Exclude<Target, 'bare'>, string> = {
  agents: '/api/v1/agents',
  usage: '/api/v1/usage',
  messages: '/api/v1/messages?limit=50',
};

export async function runHttp(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const dataDir = tempDir('http');
  let bare: RunningServer<{ port: number }> | null = null;
  let org: RunningServer<OrganismServerInfo> | null = null;
  try {
    bare = await startServer<{ port: number }>(benchFile('servers/bare-http.ts'), {}, { what: 'bare http server' });
    const input: OrganismServerInput = { dataDir, organism: 'demo', seedThreads: scale.http.seedThreads };
    org = await startServer<OrganismServerInfo>(benchFile('servers/organism-http.ts'), input, { what: 'organism server' });
    const auth = { authorization: `Bearer ${org.info.token}` };
    const urls: Record<Target, { url: string; headers?: Record<string, string> }> = {
      bare: { url: `http://127.0.0.1:${bare.info.port}/` },
      agents: { url: `http://127.0.0.1:${org.info.port}${PATHS.agents}`, headers: auth },
      usage: { url: `http://127.0.0.1:${org.info.port}${PATHS.usage}`, headers: auth },
      messages: { url: `http://127.0.0.1:${org.info.port}${PATHS.messages}`, headers: auth },
    };
    const { connections, durationSec, warmupSec } = scale.http;
    const targets: Target[] = ['bare', 'agents', 'usage', 'messages'];
    for (const t of targets) await load(urls[t].url, { connections, durationSec: warmupSec, ...(urls[t].headers ? { headers: urls[t].headers } : {}) });

    const results: Record<Target, LoadResult[]> = { bare: [], agents: [], usage: [], messages: [] };
    for (let round = 0; round < scale.rounds; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) {
        const r = await load(urls[t].url, { connections, durationSec, ...(urls[t].headers ? { headers: urls[t].headers } : {}) });
        if (r.errors > 0 || r.non2xx > 0) throw new Error(`${t}: ${r.errors} errors and ${r.non2xx} non-2xx responses out of ${r.requests}`);
        results[t].push(r);
        log(`  round ${round + 1} ${t}: ${Math.round(r.requestsPerSec)} req/s, p99 ${r.p99Ms} ms`);
      }
    }

    const rps = (t: Target) => results[t].map((r) => r.requestsPerSec);
    const p99 = (t: Target) => results[t].map((r) => r.p99Ms);
    const bareBase = { name: 'bare node:http', unit: 'req/s', rounds: rps('bare') };
    const bareP99 = { name: 'bare node:http p99', unit: 'ms', rounds: p99('bare') };
    const rows = [
      row({ scenario: 1, metric: 'GET /api/v1/agents throughput', unit: 'req/s', rounds: rps('agents'), baseline: bareBase, target: atLeast(0.6, '>= 0.6x bare', 'ratio') }),
      row({ scenario: 1, metric: 'GET /api/v1/usage throughput', unit: 'req/s', rounds: rps('usage'), baseline: bareBase, target: null }),
      row({ scenario: 1, metric: 'GET /api/v1/messages?limit=50 throughput', unit: 'req/s', rounds: rps('messages'), baseline: bareBase, target: atLeast(0.3, '>= 0.3x bare', 'ratio') }),
      row({ scenario: 1, metric: 'GET /api/v1/agents p99 latency', unit: 'ms', rounds: p99('agents'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
      row({ scenario: 1, metric: 'GET /api/v1/usage p99 latency', unit: 'ms', rounds: p99('usage'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
      row({ scenario: 1, metric: 'GET /api/v1/messages?limit=50 p99 latency', unit: 'ms', rounds: p99('messages'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
    ];
    return {
      scenario: 1,
      title: 'Control plane over HTTP',
      rows,
      context: {
        connections,
        durationSec,
        rounds: scale.rounds,
        organism: 'bundled demo, SQLite storage, auth on (Bearer token)',
        seededThreads: scale.http.seedThreads,
        journalRows: org.info.journalRows,
        usageEvents: org.info.usageEvents,
        results,
      },
      notes: [
        `Servers each run in their own process; autocannon (${connections} connections, ${durationSec} s per run) in the parent. The journal holds ${org.info.journalRows} messages from ${scale.http.seedThreads} demo threads.`,
      ],
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await bare?.stop();
    await org?.stop();
    removeDir(dataDir);
  }
}
