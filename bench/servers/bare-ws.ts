/**
 * Baseline server of scenario 4: a bare `ws` WebSocketServer in its own process (no Fastify,
 * no organism, no journal) that broadcasts frames shaped and sized like the organism's
 * message frames, each carrying the wall-clock time it was due, on the same schedule.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { childInput, serverFailed, serverReady } from '../lib/child.js';
import { sleep } from '../lib/stats.js';

async function main(): Promise<void> {
  const { frameBytes } = childInput<{ frameBytes: number }>();
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  let seq = 0;
  const frame = (sentAt: number): string => {
    const head = `{"event":"message","seq":${++seq},"timestamp":"${new Date().toISOString()}","message":{"payload":{"text":"${sentAt}"},"pad":"`;
    return `${head}${'x'.repeat(Math.max(0, frameBytes - head.length - 3))}"}}`;
  };
  await serverReady(
    { port: (wss.address() as AddressInfo).port },
    {
      /** Broadcasts `rate` frames/s for `seconds` to every connected client. */
      drive: async (cmd) => {
        const rate = Number(cmd['rate']);
        const total = Math.round(rate * Number(cmd['seconds']));
        const t0 = performance.now();
        const elu0 = performance.eventLoopUtilization();
        let behindMs = 0;
        for (let i = 0; i < total; i++) {
          const due = t0 + (i * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          else behindMs = Math.max(behindMs, -wait);
          // Stamped with the time it was due, as the organism's injects are: falling behind the
          // schedule shows as latency instead of hiding in a lower rate.
          const data = frame(performance.timeOrigin + due);
          for (const client of wss.clients) if (client.readyState === client.OPEN) client.send(data);
        }
        // Sends are synchronous here: once the loop ends, the frames are with the kernel or in ws's buffers.
        return { sent: total, behindMs, clients: wss.clients.size, elu: performance.eventLoopUtilization(elu0).utilization };
      },
    },
  );
  process.on('SIGTERM', () => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => process.exit(0));
  });
}

main().catch(serverFailed);
