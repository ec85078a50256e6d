import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { WsClient } from '../../src/service/ws/client.js';
import { NO_FILTER } from '../../src/service/ws/filter.js';
import type { Frame } from '../../src/service/ws/frames.js';
import { wireOf } from '../../src/service/ws/wire.js';

/** A socket that records what the client sends through `ws` and writes to its TCP socket directly. */
function fakeSocket(bufferedAmount = 0, extensions = '') {
  const calls: string[] = [];
  const socket = {
    OPEN: 1,
    readyState: 1,
    bufferedAmount,
    extensions,
    send: (json: string) => calls.push(`send ${json}`),
    _socket: { write: (data: Buffer) => calls.push(`write ${data.toString('hex')}`) },
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
  const client = new WsClient(s.socket, 'control', 'viewer', NO_FILTER, sendBufferBytes);
  client.open('snapshot');
  s.calls.length = 0;
  return { client, ...s };
}

describe('WsClient batching', () => {
  it('holds offered frames until flush, then writes their shared wire bytes in one TCP write', () => {
    const { client, calls } = opened();
    const frames = [frame(1), frame(2), frame(3)];
    for (const f of frames) client.offer(f);
    expect(calls).toEqual([]);
    client.flush();
    expect(calls).toEqual([`write ${Buffer.concat(frames.map(wireOf)).toString('hex')}`]);
    client.flush();
    expect(calls).toHaveLength(1); // nothing left
  });

  it('wire bytes are an unmasked, final text frame of the JSON, built once per frame', () => {
    const f = frame(7, 300);
    const wire = wireOf(f);
    expect(wire[0]).toBe(0x81); // FIN + text
    expect(wire[1]).toBe(126); // 16-bit length follows, no mask bit
    expect(wire.readUInt16BE(2)).toBe(300);
    expect(wire.subarray(4).toString()).toBe(f.json);
    expect(wireOf(f)).toBe(wire);
  });

  it('falls back to ws.send per frame when an extension was negotiated', () => {
    const s = fakeSocket(0, 'permessage-deflate');
    const client = new WsClient(s.socket, 'control', 'viewer', NO_FILTER, 1 << 20);
    client.open('snapshot');
    client.offer(frame(1));
    client.offer(frame(2));
    client.flush();
    expect(s.calls).toEqual(['send snapshot', 'send 1.........', 'send 2.........']);
  });

  it('a direct send (a reply, a snapshot) goes after the batched frames, so seqs stay in order', () => {
    const { client, calls } = opened();
    client.offer(frame(1));
    client.send('reply');
    expect(calls).toEqual([`write ${wireOf(frame(1)).toString('hex')}`, 'send reply']);
  });

  it('writes a batch early once it holds 64 KiB', () => {
    const { client, calls } = opened();
    for (let i = 0; i < 6; i++) client.offer(frame(i, 10_000));
    expect(calls).toEqual([]);
    client.offer(frame(6, 10_000)); // 70,000 bytes
    expect(calls).toHaveLength(1);
    expect(calls[0]!.length).toBeGreaterThan(2 * 70_000);
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
    const client = new WsClient(s.socket, 'control', 'viewer', NO_FILTER, 1 << 20);
    client.offer(frame(5));
    client.open('snapshot');
    expect(s.calls).toEqual(['send snapshot', 'send 5.........']);
  });
});
