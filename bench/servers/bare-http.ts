/**
 * Baseline servers of scenario 1, run exactly like the organism server (own process,
 * loopback, port chosen by the OS): a bare node:http hello-world (the baseline of the
 * targets) or, with input {fastify: true}, a Fastify hello-world (context: what the framework
 * alone costs). With {json: true} the bare server answers `{"hello":"world"}` as JSON (the
 * baseline of the wrk harness, bench/tools/wrk-http.ts). Both report their process CPU time on request.
 */
import Fastify from 'fastify';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { childInput, serverFailed, serverReady } from '../lib/child.js';

const commands = { cpu: async () => process.cpuUsage() };

async function main(): Promise<void> {
  const { fastify, json } = childInput<{ fastify?: boolean; json?: boolean }>();
  if (fastify) {
    const app = Fastify({ logger: false });
    app.get('/', async () => ({ hello: 'world' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
    await serverReady({ port: (app.server.address() as AddressInfo).port }, commands);
    return;
  }
  const body = Buffer.from(json ? JSON.stringify({ hello: 'world' }) : 'hello world');
  const type = json ? 'application/json; charset=utf-8' : 'text/plain';
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': type, 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
  await serverReady({ port: (server.address() as AddressInfo).port }, commands);
}

main().catch(serverFailed);
