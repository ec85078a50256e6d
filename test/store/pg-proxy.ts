import net from 'node:net';
import { PG_ADMIN_URL } from './contract/backends.js';

/**
 * A TCP proxy to the test PostgreSQL server that a test can cut and reopen: the server itself
 * is shared with other tests and must stay up.
 */
const PG_PORT = Number(new URL(PG_ADMIN_URL).port || 5432);

/** Forwards 127.0.0.1:port to the PostgreSQL server; `cut` refuses new connections and breaks the open ones. */
export class PgProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  constructor(readonly port: number) {}

  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(PG_PORT, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

/** `url` with its port replaced by the proxy's. */
export function viaProxy(url: string, proxy: PgProxy): string {
  const u = new URL(url);
  u.port = String(proxy.port);
  return u.toString();
}
