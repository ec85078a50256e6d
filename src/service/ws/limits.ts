/** Connection limits, buffers and heartbeat of the WebSocket channels (all configurable). */
export interface WsLimits {
  /** Connections at once across both channels. */
  readonly maxConnections: number;
  /** Connections at once from one client address. */
  readonly maxPerIp: number;
  /**
   * Upgrades from one client address still in progress at once (from the request until the
   * first frame is out); more are refused with 429 before any handshake.
   */
  readonly maxHandshakesPerIp: number;
  /** Bytes a socket may have waiting to be sent before it stops getting frames (then resync or close). */
  readonly sendBufferBytes: number;
  /** Frames kept for `?since=` resumes. */
  readonly replayBuffer: number;
  /** Interval of server pings; a passive client that answers them stays connected for ever. */
  readonly pingIntervalMs: number;
  /** Pings left unanswered before the connection is terminated. */
  readonly maxMissedPings: number;
  /** How long a backed-up client may stay over its send buffer before it is closed. */
  readonly slowClientGraceMs: number;
  /** Largest command a client may send (bytes); larger closes with 1009. */
  readonly maxCommandBytes: number;
  /**
   * Event frames leave in batches at most this often (ms): one socket write per client per
   * batch instead of one per frame, which is what lets a thousand clients follow a busy pump
   * (bench scenario 4). 0 sends every frame at once.
   */
  readonly batchMs: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxConnections: 2_000,
  maxPerIp: 1_000,
  maxHandshakesPerIp: 32,
  sendBufferBytes: 1 << 20,
  replayBuffer: 10_000,
  pingIntervalMs: 30_000,
  maxMissedPings: 3,
  slowClientGraceMs: 30_000,
  maxCommandBytes: 1 << 20,
  batchMs: 20,
};

/** Defaults overlaid with what was given; nonsensical values (<= 0, NaN) fall back to the default. */
export function resolveLimits(given: Partial<WsLimits> | undefined): WsLimits {
  const out: Record<string, number> = { ...DEFAULT_WS_LIMITS };
  for (const [key, value] of Object.entries(given ?? {})) {
    if (key in DEFAULT_WS_LIMITS && typeof value === 'number' && Number.isFinite(value) && value >= 0) out[key] = value;
  }
  return out as unknown as WsLimits;
}

/** Close codes (RFC 6455): 1001 going away, 1008 policy, 1011 server error, 1013 try again later. */
export const CloseCode = {
  SHUTDOWN: 1001,
  /** A bad filter in the query, unanswered pings (connection limits refuse the upgrade itself: 429/503). */
  POLICY: 1008,
  INTERNAL: 1011,
  /** A client that stayed backed up past its send buffer for the grace period. */
  TOO_SLOW: 1013,
} as const;

/** A close reason must fit in 123 bytes (RFC 6455); longer ones make `ws` throw. */
export function closeReason(text: string): string {
  let out = text;
  while (Buffer.byteLength(out, 'utf8') > 123) out = out.slice(0, -1);
  return out;
}
