/**
 * Baseline server: a bare node:http hello-world, run exactly like the organism server (its
 * own process, loopback, port chosen by the OS) so the ratio compares servers, not setups.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serverFailed, serverReady } from '../lib/child.js';

const body = Buffer.from('hello world');
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  serverReady({ port }).catch(serverFailed);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
