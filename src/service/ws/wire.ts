import * as ws from 'ws';
import type { WebSocket } from 'ws';
import type { Frame } from './frames.js';

/**
 * A frame's bytes on the wire: the WebSocket text frame as a server sends it (unmasked, no
 * extension), identical for every client. Built once per frame and shared, so fanning a frame
 * out to a thousand clients costs one encoding, not a thousand.
 */
type FrameBuilder = (data: Buffer, options: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean }) => Buffer[];
// `Sender` is exported by ws's ESM entry but missing from its type definitions.
const buildFrame = (ws as unknown as { Sender: { frame: FrameBuilder } }).Sender.frame;

const TEXT = 0x1;
const wires = new WeakMap<Frame, Buffer>();

export function wireOf(frame: Frame): Buffer {
  let wire = wires.get(frame);
  if (!wire) {
    const parts = buildFrame(Buffer.from(frame.json), { fin: true, rsv1: false, opcode: TEXT, mask: false, readOnly: false });
    wire = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    wires.set(frame, wire);
  }
  return wire;
}

/** The TCP socket under a WebSocket, when frames may be written to it directly (no extension negotiated). */
export function rawSocketOf(socket: WebSocket): { write(data: Buffer): boolean } | null {
  if (socket.extensions !== '') return null;
  return (socket as unknown as { _socket?: { write(data: Buffer): boolean } })._socket ?? null;
}
