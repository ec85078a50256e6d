/**
 * A burst of WebSocket upgrades against a server, run as its own process (so the burst's
 * client work does not share an event loop with whoever watches the server):
 *
 *   node --import tsx test/service/ws-helpers/burst.ts <host> <port> <count> <inFlight> [token]
 *
 * Opens `count` upgrades of /ws over raw TCP (cheap on the client), at most `inFlight` at a
 * time, keeping every accepted (101) connection open until the burst ends. Prints one JSON line:
 * how many upgrades got each HTTP status (`error` when the connection failed before a status
 * line) and how long the burst took.
 */
import { connect, type Socket } from 'node:net';

const [host = '127.0.0.1', portText = '0', countText = '1000', inFlightText = '200', token] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const inFlight = Number(inFlightText);

const statuses: Record<string, number> = {};
const kept: Socket[] = [];
const request =
  `GET /ws${token ? `?token=${encodeURIComponent(token)}` : ''} HTTP/1.1\r\n` +
  `Host: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';

/** One upgrade: resolves with its status once the status line has arrived (or the socket failed). */
function upgrade(): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    let head = '';
    let done = false;
    const finish = (status: string, keep: boolean) => {
      if (done) return;
      done = true;
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (keep) kept.push(socket);
      else socket.destroy();
      resolve();
    };
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      head += chunk.toString('latin1');
      const line = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (line) finish(line[1]!, line[1] === '101');
    });
    socket.on('error', () => finish('error', false));
    socket.on('close', () => finish('error', false));
  });
}

const started = Date.now();
let next = 0;
async function lane(): Promise<void> {
  while (next < count) {
    next++;
    await upgrade();
  }
}
await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
const ms = Date.now() - started;
for (const s of kept) s.destroy();
process.stdout.write(`${JSON.stringify({ statuses, ms })}\n`);
