import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serveAccepted } from '../../src/cli/server-channel.js';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

describe('serveAccepted: a connection accepted outside the HTTP server', () => {
  it('is served with Nagle off, as the HTTP server would accept it itself', async () => {
    // Accepted by a plain net server (no noDelay), as the supervisor's is.
    const acceptor = net.createServer();
    const httpServer = http.createServer((_req, res) => res.end('ok'));
    closers.push(
      () => acceptor.close(),
      () => httpServer.close(),
    );
    const accepted: Socket[] = [];
    acceptor.on('connection', (socket) => {
      const setNoDelay = vi.spyOn(socket, 'setNoDelay');
      accepted.push(socket);
      serveAccepted(httpServer)(socket);
      expect(setNoDelay).toHaveBeenCalledWith(true);
    });
    acceptor.listen(0, '127.0.0.1');
    await once(acceptor, 'listening');
    const { port } = acceptor.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } });
    expect(await res.text()).toBe('ok');
    expect(accepted).toHaveLength(1);
    for (const s of accepted) s.destroy();
  });
});
