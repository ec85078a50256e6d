/**
 * Profiles the organism server (scenario 1's setup) under load on one route:
 *   node --import tsx bench/tools/profile-route.ts /api/v1/messages?limit=50 [seconds=5] [seedThreads=500]
 * Writes the server's CPU profile under bench/profiles/ and prints its summary.
 */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchFile, startServer } from '../lib/child.js';
import { load } from '../lib/http-load.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { OrganismServerInfo } from '../servers/organism-http.js';
import { summarize } from './profile-summary.js';

const [route = '/api/v1/agents', seconds = '5', seed = '500'] = process.argv.slice(2);
const profiles = fileURLToPath(new URL('../profiles/', import.meta.url));
mkdirSync(profiles, { recursive: true });
const dataDir = tempDir('profile');
const server = await startServer<OrganismServerInfo>(
  benchFile('servers/organism-http.ts'),
  { dataDir, organism: 'demo', seedThreads: Number(seed) },
  {
    execArgv: ['--cpu-prof', '--cpu-prof-dir', profiles],
  },
);
const url = `http://127.0.0.1:${server.info.port}${route}`;
const r = await load(url, { connections: 100, durationSec: Number(seconds), headers: { authorization: `Bearer ${server.info.token}` } });
process.stdout.write(`${route}: ${Math.round(r.requestsPerSec)} req/s, p99 ${r.p99Ms} ms, journal ${server.info.journalRows} rows\n`);
const before = Date.now();
await server.stop();
removeDir(dataDir);
const newest = readdirSync(profiles)
  .filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => path.join(profiles, f))
  .filter((f) => statSync(f).mtimeMs >= before - 1000)
  .sort((a, b) => statSync(b).size - statSync(a).size)[0]; // the main thread's (tsx's loader thread writes one too)
if (newest) process.stdout.write(`${summarize(newest, 30)}\n`);
