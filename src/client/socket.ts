import type { ConnectedFrame, ErrorFrame, FrameOf, Inject, InjectedFrame, PongFrame, ServerFrame, SubscribedFrame, WsFilter } from './types.js';

/** The part of a WebSocket the client uses: the browser's WebSocket and the `ws` package both fit. */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** How a socket may carry the token; a factory uses the one its WebSocket supports. */
export interface WebSocketAuth {
  /** `Authorization: Bearer <token>` (Node's `ws`). */
  readonly headers: Record<string, string>;
  /**
   * Handshake subprotocols `organism.v1` and `bearer.<base64url(token)>`: what a browser's
   * WebSocket, which cannot set headers, should offer (`new WebSocket(url, protocols)`). The
   * token then stays out of the URL, and so out of logs and history. Empty without a token.
   */
  readonly protocols: string[];
  /** The URL with `?token=`: a last resort (URLs end up in logs). */
  readonly urlWithToken: string;
}

/** Opens a socket to `url` (no token in it), authenticated by one of the forms of `auth`. */
export type WebSocketFactory = (url: string, auth: WebSocketAuth) => WebSocketLike;

/** The subprotocol the service answers with. */
export const WS_SUBPROTOCOL = 'organism.v1';

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The handshake subprotocols carrying `token`: `['organism.v1', 'bearer.<base64url(token)>']`. */
export function bearerProtocols(token: string): string[] {
  return [WS_SUBPROTOCOL, `bearer.${base64url(token)}`];
}

const OPEN = 1;

/** Whether we run in Node (then `ws` is used, with the token in a header rather than the URL). */
function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string' && typeof (globalThis as { window?: unknown }).window === 'undefined';
}

/**
 * The default factory: `ws` in Node (Node 20 has no global WebSocket, and `ws` can send the
 * token as a header), the global WebSocket elsewhere. `ws` is imported lazily through a
 * variable so bundlers building for the browser never pull it in.
 */
export async function defaultWebSocketFactory(): Promise<WebSocketFactory> {
  if (inNode()) {
    const name = 'ws';
    const mod = (await import(/* @vite-ignore */ name)) as { WebSocket?: unknown; default?: unknown };
    const Ws = (mod.WebSocket ?? mod.default) as new (url: string, options: { headers: Record<string, string> }) => WebSocketLike;
    return (url, auth) => new Ws(url, { headers: auth.headers });
  }
  const Global = (globalThis as { WebSocket?: new (url: string, protocols?: string[]) => WebSocketLike }).WebSocket;
  if (!Global) throw new Error('organism client: no WebSocket available; pass options.webSocket');
  // A browser cannot set Authorization on a WebSocket: the token goes as a subprotocol.
  return (url, auth) => (auth.protocols.length > 0 ? new Global(url, auth.protocols) : new Global(url));
}

/** Options of `client.watch()`: which stream, an initial filter, and how to reconnect. */
export interface WatchOptions {
  /** `control` = /ws (snapshot, every event, inject); `messages` = /ws/messages (message frames only). */
  readonly channel?: 'control' | 'messages';
  /** Initial filter (empty lists = everything). Kept across reconnects; `subscribe()` replaces it. */
  readonly filter?: Partial<WsFilter>;
  /** Reconnect after a drop (default true), resuming from the last `seq` seen. */
  readonly reconnect?: boolean;
  /** Reconnect delay: doubles from `initial` up to `max` (ms); reset once connected. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
}

/** The events an `OrganismSocket` emits (`socket.on(name, listener)`), with what each carries. */
export interface SocketEvents {
  /** Every frame, in order. */
  frame: ServerFrame;
  /** The first `connected` frame of each connection (snapshot, resume or resync). */
  connected: ConnectedFrame;
  /**
   * Frames were lost (the server restarted, the replay buffer was overrun, or this client fell
   * behind): the frame is a fresh snapshot; rebuild your views from it or from REST.
   */
  resync: ConnectedFrame;
  /** The socket closed; `reconnecting` tells whether another attempt follows. */
  disconnected: { code: number; reason: string; reconnecting: boolean };
  /** A transport error (the socket closes after it). */
  error: unknown;
}

type EventName = ServerFrame['event'];
type Listener<T> = (value: T) => void;

interface Pending {
  readonly cmd: string;
  resolve(frame: ServerFrame): void;
  reject(error: Error): void;
}

/** A command the server refused: its `{event: "error"}` reply. */
export class OrganismCommandError extends Error {
  override readonly name = 'OrganismCommandError';
  constructor(readonly frame: ErrorFrame) {
    super(frame.error);
  }
}

const REPLY_OF: Record<string, string> = { pong: 'ping', subscribed: 'subscribe', injected: 'inject' };

/**
 * A live connection to /ws or /ws/messages that survives drops: it reconnects with
 * `since=<last seq>&bootId=<bootId>` so missed frames are replayed, and reports `resync` when
 * they could not be. Commands (`subscribe`, `inject`, `ping`) answer with their reply frame.
 */
export class OrganismSocket {
  #socket: WebSocketLike | null = null;
  #closed = false;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #nextId = 0;
  #filter: WsFilter;
  readonly #pending = new Map<string, Pending>();
  readonly #listeners = new Map<string, Set<Listener<never>>>();
  #firstConnected: Promise<ConnectedFrame>;
  #resolveFirst!: (f: ConnectedFrame) => void;
  #awaitingConnected = false;

  /** The last `seq` received (0 before any frame). */
  lastSeq = 0;
  /** The server process's bootId, from the last `connected` frame. */
  bootId: string | null = null;

  constructor(
    private readonly wsUrl: string,
    private readonly token: string | undefined,
    private readonly factory: Promise<WebSocketFactory>,
    private readonly options: WatchOptions = {},
  ) {
    this.#filter = { threads: [], agents: [], payloadTypes: [], events: [], ...options.filter };
    this.#firstConnected = new Promise((resolve) => (this.#resolveFirst = resolve));
    void this.#open();
  }

  /** Resolves with the first `connected` frame. */
  ready(): Promise<ConnectedFrame> {
    return this.#firstConnected;
  }

  get connected(): boolean {
    return this.#socket?.readyState === OPEN;
  }

  get filter(): WsFilter {
    return this.#filter;
  }

  /** Listens to one frame kind (`'message'`, `'usage'`, ...) or a socket event; returns an unsubscribe function. */
  on<E extends keyof SocketEvents>(event: E, listener: Listener<SocketEvents[E]>): () => void;
  on<E extends EventName>(event: E, listener: Listener<FrameOf<E>>): () => void;
  on(event: string, listener: Listener<never>): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => void set.delete(listener);
  }

  /** Replaces the filter (kept for reconnects); answers the server's `subscribed` frame. */
  async subscribe(filter: Partial<WsFilter>): Promise<SubscribedFrame> {
    const reply = (await this.#command('subscribe', { ...filter })) as SubscribedFrame;
    this.#filter = reply.filter;
    return reply;
  }

  /** Operators only, on the control channel. */
  inject(request: Inject): Promise<InjectedFrame> {
    return this.#command('inject', { ...request }) as Promise<InjectedFrame>;
  }

  ping(): Promise<PongFrame> {
    return this.#command('ping', {}) as Promise<PongFrame>;
  }

  /** Closes for good (no reconnect); pending commands are rejected. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#socket?.close(1000, 'client closed');
    this.#failPending('socket closed by the client');
  }

  #emit(event: string, value: unknown): void {
    for (const l of this.#listeners.get(event) ?? []) (l as Listener<unknown>)(value);
  }

  #url(): string {
    const params = new URLSearchParams();
    const f = this.#filter;
    for (const t of f.threads) params.append('thread', t);
    for (const a of f.agents) params.append('agent', a);
    for (const p of f.payloadTypes) params.append('payloadType', p);
    for (const e of f.events) params.append('event', e);
    if (this.bootId !== null) {
      params.set('since', String(this.lastSeq));
      params.set('bootId', this.bootId);
    }
    const path = this.options.channel === 'messages' ? '/ws/messages' : '/ws';
    const q = params.toString();
    return `${this.wsUrl}${path}${q ? `?${q}` : ''}`;
  }

  async #open(): Promise<void> {
    if (this.#closed) return;
    let factory: WebSocketFactory;
    try {
      factory = await this.factory;
    } catch (err) {
      this.#emit('error', err);
      return;
    }
    const url = this.#url();
    const headers: Record<string, string> = this.token !== undefined ? { authorization: `Bearer ${this.token}` } : {};
    const urlWithToken = this.token !== undefined ? `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(this.token)}` : url;
    let socket: WebSocketLike;
    try {
      socket = factory(url, { headers, protocols: this.token !== undefined ? bearerProtocols(this.token) : [], urlWithToken });
    } catch (err) {
      this.#emit('error', err);
      return this.#scheduleReconnect({ code: 1006, reason: String(err) });
    }
    this.#socket = socket;
    this.#awaitingConnected = true;
    socket.onmessage = (ev) => this.#onText(typeof ev.data === 'string' ? ev.data : String(ev.data));
    socket.onerror = (ev) => this.#emit('error', ev);
    socket.onclose = (ev) => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      this.#failPending(`socket closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ''}) before the reply`);
      this.#scheduleReconnect(ev);
    };
  }

  #scheduleReconnect(ev: { code: number; reason: string }): void {
    const reconnecting = !this.#closed && this.options.reconnect !== false;
    this.#emit('disconnected', { code: ev.code, reason: ev.reason, reconnecting });
    if (!reconnecting) return;
    const initial = this.options.backoff?.initialMs ?? 250;
    const max = this.options.backoff?.maxMs ?? 5_000;
    const delay = Math.min(max, initial * 2 ** Math.min(this.#attempt, 20));
    this.#attempt++;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#open();
    }, delay);
  }

  #onText(text: string): void {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(text) as ServerFrame;
    } catch {
      return; // the server only sends JSON; anything else is not ours to interpret
    }
    if (frame.event === 'connected') this.#onConnected(frame);
    else if (typeof frame.seq === 'number') this.lastSeq = Math.max(this.lastSeq, frame.seq);
    this.#settle(frame);
    this.#emit('frame', frame);
    this.#emit(frame.event, frame);
  }

  #onConnected(frame: ConnectedFrame): void {
    const first = this.#awaitingConnected;
    this.#awaitingConnected = false;
    const lost = frame.resync === true || (this.bootId !== null && frame.bootId !== this.bootId);
    // A new snapshot restarts the count (a restarted server numbers from 1 again).
    this.lastSeq = lost || this.bootId === null ? frame.seq : Math.max(this.lastSeq, frame.seq);
    this.bootId = frame.bootId;
    if (first) {
      this.#attempt = 0;
      this.#resolveFirst(frame);
    }
    if (frame.filter) this.#filter = frame.filter;
    if (lost) this.#emit('resync', frame);
  }

  #command(cmd: string, body: Record<string, unknown>): Promise<ServerFrame> {
    const socket = this.#socket;
    if (!socket || socket.readyState !== OPEN) return Promise.reject(new Error(`organism client: cannot ${cmd}, the socket is not open`));
    const id = `c${++this.#nextId}`;
    return new Promise<ServerFrame>((resolve, reject) => {
      this.#pending.set(id, { cmd, resolve, reject });
      socket.send(JSON.stringify({ ...body, cmd, id }));
    }).then((frame) => (frame.event === 'error' ? Promise.reject(new OrganismCommandError(frame)) : frame));
  }

  /** Matches a reply to its command: by the echoed `id`, else the oldest command of its kind. */
  #settle(frame: ServerFrame): void {
    if (frame.event !== 'pong' && frame.event !== 'subscribed' && frame.event !== 'injected' && frame.event !== 'error') return;
    let key: string | undefined;
    if (frame.id !== undefined && this.#pending.has(String(frame.id))) key = String(frame.id);
    else {
      const kind = frame.event === 'error' ? (typeof frame.cmd === 'string' ? frame.cmd : undefined) : REPLY_OF[frame.event];
      for (const [id, p] of this.#pending) {
        if (kind === undefined || p.cmd === kind) {
          key = id;
          break;
        }
      }
    }
    if (key === undefined) return;
    const pending = this.#pending.get(key)!;
    this.#pending.delete(key);
    pending.resolve(frame);
  }

  #failPending(why: string): void {
    for (const p of this.#pending.values()) p.reject(new Error(`organism client: ${p.cmd}: ${why}`));
    this.#pending.clear();
  }
}
