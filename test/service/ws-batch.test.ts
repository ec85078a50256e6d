import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { WsClient } from '../../src/service/ws/client.js';
import { NO_FILTER } from '../../src/service/ws/filter.js';
import type { Frame } from '../../src/service/ws/frames.js';

/** A socket that records what the client does to it, and to its TCP socket (cork/uncork). */
function fakeSocket(bufferedAmount = 0) {
  const calls: string[] = [];
  const socket = {
    OPEN: 1,
    readyState: 1,
    bufferedAmount,
    send: (json: string) => calls.push(`send ${json}`),
    _socket: { cork: () => calls.push('cork'), uncork: () => calls.push('uncork') },
  };
  return { socket: socket as unknown as WebSocket, calls, raw: socket };
}

const frame = (seq: number, bytes = 10): Frame => ({
  seq,
  meta: { event: 'message', threadId: 't', agents: ['a'], payloadType: 'Text', isMessage: true },
  json: `${seq}`.padEnd(bytes, '.'),
});

function opened(bufferedAmount = 0, sendBufferBytes = 1 << 20) {
  const s = fakeSocket(bufferedAmount);
  const client = new WsClient(s.socket, 'control', 'viewer', '127.0.0.1', NO_FILTER, sendBufferBytes);
  client.open('snapshot');
  s.calls.length = 0;
  return { client, ...s };
}

describe('WsClient batching', () => {
  it('holds offered frames until flush, then writes them corked: one TCP write for the batch', () => {
    const { client, calls } = opened();
    client.offer(frame(1));
    client.offer(frame(2));
    client.offer(frame(3));
    expect(calls).toEqual([]);
    client.flush();
    expect(calls).toEqual(['cork', 'send 1.........', 'send 2.........', 'send 3.........', 'uncork']);
    client.flush();
    expect(calls).toHaveLength(5); // nothing left
  });

  it('a direct send (a reply, a snapshot) goes after the batched frames, so seqs stay in order', () => {
    const { client, calls } = opened();
    client.offer(frame(1));
    client.send('reply');
    expect(calls).toEqual(['cork', 'send 1.........', 'uncork', 'send reply']);
  });

  it('writes a batch early once it holds 64 KiB', () => {
    const { client, calls } = opened();
    for (let i = 0; i < 6; i++) client.offer(frame(i, 10_000));
    expect(calls).toEqual([]);
    client.offer(frame(6, 10_000)); // 70,000 bytes
    expect(calls.filter((c) => c.startsWith('send'))).toHaveLength(7);
  });

  it('a client over its send buffer is marked lagging and its batch dropped', () => {
    const { client, calls, raw } = opened(0, 1000);
    client.offer(frame(1));
    raw.bufferedAmount = 2000;
    expect(client.offer(frame(2))).toBe(false);
    expect(client.lagging).toBe(true);
    client.flush();
    expect(calls).toEqual([]);
  });

  it('frames waiting for the snapshot are not batched: they follow it at once', () => {
    const s = fakeSocket();
    const client = new WsClient(s.socket, 'control', 'viewer', '127.0.0.1', NO_FILTER, 1 << 20);
    client.offer(frame(5));
    client.open('snapshot');
    expect(s.calls).toEqual(['send snapshot', 'send 5.........']);
  });
});
