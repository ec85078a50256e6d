import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a flooding server sends: a head, then `filler` repeated until `totalBytes` are written,
 * then a tail. Generated as it is written (with backpressure), never held whole.
 */
export interface Flood {
  readonly status?: number;
  readonly contentType: string;
  readonly head: string;
  readonly filler: string;
  readonly tail: string;
  readonly totalBytes: number;
}

export interface FloodServer {
  readonly url: string;
  /** Bytes written to the socket so far (the last request's). */
  readonly sentBytes: number;
  /** Requests received. */
  readonly requests: number;
  /** Resolves with what the last request's answer came to: closed by the client before its end, or sent whole. */
  outcome(): Promise<{ closedEarly: boolean; sentBytes: number }>;
  close(): Promise<void>;
}

/** A local HTTP server that answers every POST with `flood`, streaming it out chunk by chunk. */
export async function startFloodServer(flood: Flood): Promise<FloodServer> {
  let sentBytes = 0;
  let requests = 0;
  type Outcome = { closedEarly: boolean; sentBytes: number };
  let settle: (o: Outcome) => void = () => {};
  let last = new Promise<Outcome>((r) => (settle = r));
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // A later request gets a fresh outcome; the first one's was made before any request.
      if (requests++ > 0) last = new Promise<Outcome>((r) => (settle = r));
      sentBytes = 0;
      const done = settle;
      res.on('close', () => done({ closedEarly: !res.writableFinished, sentBytes }));
      res.writeHead(flood.status ?? 200, { 'content-type': flood.contentType });
      pump(res, flood, (n) => (sentBytes += n));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get sentBytes() {
      return sentBytes;
    },
    get requests() {
      return requests;
    },
    outcome: () => last,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function pump(res: ServerResponse, flood: Flood, count: (n: number) => void): void {
  const filler = Buffer.from(flood.filler);
  let left = flood.totalBytes - Buffer.byteLength(flood.head) - Buffer.byteLength(flood.tail);
  const write = (chunk: Buffer | string) => {
    count(Buffer.byteLength(chunk));
    return res.write(chunk);
  };
  write(flood.head);
  const more = () => {
    while (left > 0 && !res.destroyed) {
      const chunk = left >= filler.length ? filler : filler.subarray(0, left);
      left -= chunk.length;
      if (!write(chunk)) return void res.once('drain', more);
    }
    if (res.destroyed) return;
    write(flood.tail);
    res.end();
  };
  more();
}
