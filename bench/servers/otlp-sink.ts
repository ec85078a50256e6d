/**
 * An OTLP/HTTP endpoint that accepts every export and counts what it received, in its own
 * process as a collector would be: its work is not charged to the organism it serves (the
 * tracing rows measure what tracing costs the organism, not what a collector costs).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serverFailed, serverReady } from '../lib/child.js';

export interface OtlpSinkInfo {
  readonly url: string;
}

async function main(): Promise<void> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/x-protobuf') }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
  // Its parent gone (killed before stopping it), it goes too rather than linger.
  process.on('disconnect', () => process.exit(0));
  await serverReady<OtlpSinkInfo>({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { received: async () => ({ requests, bytes }) });
}

main().catch(serverFailed);
