import type { Duplex } from 'node:stream';
import { Errors, type OrganismError } from '../../errors/catalogue.js';
import type { WsLimits } from './limits.js';

/** Seconds a refused client should wait before trying again (the `Retry-After` of a refusal). */
const RETRY_AFTER_SECONDS = 1;

/** A refused upgrade: the HTTP status and error, and the word counted in the dropped-connections metric. */
export interface Refusal {
  readonly error: OrganismError;
  readonly reason: 'too_many_connections' | 'too_many_from_ip' | 'too_many_handshakes';
}

/**
 * One admitted upgrade, counted from the upgrade request until its socket closes (as one of
 * the connections) and until its first frame is out (as a handshake in progress).
 */
export interface Ticket {
  /** The first frame is out (or the connection was refused later on): no longer a handshake. */
  handshakeDone(): void;
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

/**
 * Decides on each WebSocket upgrade as the request arrives, before any hook, route or
 * handshake runs: a burst of upgrades past the limits costs one short HTTP answer each and
 * never a 101, a snapshot or a close handshake. Counts are kept per remote address, so a
 * client that opens connections faster than they complete is held to `maxHandshakesPerIp`
 * at once, and no address takes more than `maxPerIp` of the `maxConnections`.
 */
export class WsAdmission {
  private total = 0;
  private readonly perIp = new Map<string, number>();
  private readonly handshakes = new Map<string, number>();

  constructor(private readonly limits: WsLimits) {}

  /** Connections admitted and not closed yet (open, or still handshaking). */
  get connections(): number {
    return this.total;
  }

  /**
   * Admits the upgrade on `socket` from `ip` (a ticket released when the socket closes), or
   * says why not.
   */
  admit(ip: string, socket: Duplex): Ticket | Refusal {
    const { maxConnections, maxPerIp, maxHandshakesPerIp } = this.limits;
    if (this.total >= maxConnections) return { error: Errors.WS_TOO_MANY_CONNECTIONS(maxConnections), reason: 'too_many_connections' };
    if ((this.perIp.get(ip) ?? 0) >= maxPerIp) return { error: Errors.WS_TOO_MANY_FROM_IP(ip, maxPerIp), reason: 'too_many_from_ip' };
    if ((this.handshakes.get(ip) ?? 0) >= maxHandshakesPerIp) {
      return { error: Errors.WS_TOO_MANY_HANDSHAKES(ip, maxHandshakesPerIp), reason: 'too_many_handshakes' };
    }
    this.total++;
    bump(this.perIp, ip, 1);
    bump(this.handshakes, ip, 1);
    let handshaking = true;
    const handshakeDone = (): void => {
      if (!handshaking) return;
      handshaking = false;
      bump(this.handshakes, ip, -1);
    };
    socket.once('close', () => {
      handshakeDone();
      this.total--;
      bump(this.perIp, ip, -1);
    });
    return { handshakeDone };
  }
}

export function isRefusal(v: Ticket | Refusal): v is Refusal {
  return 'error' in v;
}

const REASONS: Record<number, string> = { 429: 'Too Many Requests', 503: 'Service Unavailable' };

/**
 * Answers a refused upgrade on the raw socket (no WebSocket exists yet) with its status, a
 * `Retry-After` and the usual `{detail, code}` body, then closes the connection once written.
 */
export function refuseUpgrade(socket: Duplex, error: OrganismError): void {
  const body = JSON.stringify({ detail: error.detail, code: error.code });
  const head = [
    `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Error'}`,
    'Connection: close',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Retry-After: ${RETRY_AFTER_SECONDS}`,
  ].join('\r\n');
  socket.once('finish', () => socket.destroy());
  socket.once('error', () => socket.destroy());
  socket.end(`${head}\r\n\r\n${body}`);
}
