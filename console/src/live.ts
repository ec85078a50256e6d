// The live view of the organism: one /ws socket of organism/client (snapshot, then events;
// the client resumes with `since=<seq>&bootId=` after a drop), fully reloaded on
// `resync: true`. Components read it through useLive(); updates are batched to one render per
// animation frame, so a burst of events costs one render, not one per event.
import { useSyncExternalStore } from 'react';
import type { OrganismSocket, ServerFrame } from 'organism/client';
import { api, clientFor, type AgentInfo, type InboxCounts, type JournalStats, type MessageRecord, type ThreadInfo } from './api';

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A frame of the /ws stream, as organism/client types it. */
export type Frame = ServerFrame;

/** Counts per second over the last WINDOW seconds (a ring of buckets). */
const WINDOW = 300;
export class Rate {
  readonly buckets = new Float64Array(WINDOW);
  private lastSecond = 0;
  add(n: number, now = Date.now()): void {
    this.advance(now);
    this.buckets[this.lastSecond % WINDOW]! += n;
  }
  private advance(now: number): void {
    const sec = Math.floor(now / 1000);
    if (this.lastSecond === 0) this.lastSecond = sec;
    for (let s = this.lastSecond + 1; s <= sec && s - this.lastSecond <= WINDOW; s++) this.buckets[s % WINDOW] = 0;
    if (sec - this.lastSecond > WINDOW) this.buckets.fill(0);
    this.lastSecond = Math.max(this.lastSecond, sec);
  }
  /** The last `n` seconds (n < WINDOW), oldest first; the last one is the current, partial second. */
  series(n: number, now = Date.now()): number[] {
    this.advance(now);
    const out: number[] = [];
    for (let s = this.lastSecond - n + 1; s <= this.lastSecond; s++) out.push(this.buckets[((s % WINDOW) + WINDOW) % WINDOW]!);
    return out;
  }
  /** Mean per second over the `n` whole seconds before the current one. */
  mean(n: number, now = Date.now()): number {
    const s = this.series(n + 1, now).slice(0, n);
    return s.reduce((a, b) => a + b, 0) / n;
  }
}

/** Worker events kept for the overview. */
const PROCESS_EVENTS = 20;

export interface EdgeStats {
  from: string;
  to: string;
  count: number;
  denied: number;
  rate: Rate;
}

export interface LiveState {
  connection: ConnectionState;
  bootId: string | null;
  lastSeq: number;
  organism: { name: string; status: string; activeThreads: number; totalMessages: number } | null;
  agents: Map<string, AgentInfo>;
  threads: Map<string, ThreadInfo>;
  journal: JournalStats | null;
  /** Open inbox items: from the snapshot, then counted from inbox_opened / inbox_closed. */
  inbox: InboxCounts | null;
  edges: Map<string, EdgeStats>;
  messageRate: Rate;
  tokenRate: Rate;
  /** The latest `worker` and `deliveries_taken_back` frames, newest first (bounded). */
  processEvents: Frame[];
  /** Bumped on every resync: views refetch everything. */
  generation: number;
  /** Bumped on every batch of events. */
  version: number;
}

type Listener = () => void;
type EventListener = (frame: Frame) => void;

export class LiveStore {
  private socket: OrganismSocket | null = null;
  private unsubscribe: Array<() => void> = [];
  private listeners = new Set<Listener>();
  private eventListeners = new Set<EventListener>();
  private pending = false;
  private stopped = false;
  state: LiveState = LiveStore.empty();

  constructor(
    private readonly token: string,
    /** Told when the server refused the token (the socket never opened, twice in a row). */
    private readonly onAuthLost: () => void,
    private readonly onResync: () => void,
  ) {}

  static empty(): LiveState {
    return {
      connection: 'connecting',
      bootId: null,
      lastSeq: 0,
      organism: null,
      agents: new Map(),
      threads: new Map(),
      journal: null,
      inbox: null,
      edges: new Map(),
      messageRate: new Rate(),
      tokenRate: new Rate(),
      processEvents: [],
      generation: 0,
      version: 0,
    };
  }

  /**
   * Opens the socket; the client authenticates it with the token as a subprotocol (a browser
   * cannot set Authorization on a WebSocket, and a token in the URL would land in logs), and
   * reconnects with backoff after a drop.
   */
  start(): void {
    this.stopped = false;
    const socket = clientFor(this.token).watch({ backoff: { initialMs: 250, maxMs: 5000 } });
    this.socket = socket;
    let opened = false;
    let refused = 0;
    this.unsubscribe = [
      socket.on('frame', (frame) => {
        if (frame.event === 'connected') {
          opened = true;
          refused = 0;
        }
        this.apply(frame);
      }),
      socket.on('disconnected', () => {
        if (this.stopped) return;
        this.set({ connection: 'reconnecting' });
        refused = opened ? 1 : refused + 1;
        // Refused before opening: maybe the token is gone (server restarted with other tokens).
        if (!opened && refused >= 2) this.onAuthLost();
        opened = false;
      }),
    ];
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe.splice(0)) off();
    this.socket?.close();
    this.socket = null;
  }

  subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };

  onEvent(l: EventListener): () => void {
    this.eventListeners.add(l);
    return () => this.eventListeners.delete(l);
  }

  private apply(frame: Frame): void {
    const s = this.state;
    if (frame.seq > s.lastSeq || frame.event === 'connected') s.lastSeq = frame.seq;
    switch (frame.event) {
      case 'connected': {
        const fresh = frame['bootId'] !== s.bootId || frame['resync'] === true;
        s.connection = 'open';
        s.bootId = frame['bootId'] as string;
        s.organism = frame['organism'] as LiveState['organism'];
        s.agents = new Map((frame['agents'] as AgentInfo[]).map((a) => [a.name, a]));
        s.threads = new Map((frame['threads'] as ThreadInfo[]).map((t) => [t.id, t]));
        s.journal = frame['journal'] as JournalStats;
        s.inbox = frame.inbox ?? s.inbox;
        if (fresh && s.generation++ > 0) this.onResync();
        if (s.generation === 0) s.generation = 1;
        // The totals so far per edge (the events only tell what comes next).
        if (fresh)
          void api.edges().then(
            (r) => this.seedEdges(r.edges),
            () => {},
          );
        break;
      }
      case 'message': {
        const m = frame['message'] as MessageRecord;
        if (m.deliveryState === 'PENDING') {
          s.messageRate.add(1);
          const key = `${m.from}\u0000${m.to}`;
          const edge = s.edges.get(key) ?? { from: m.from, to: m.to, count: 0, denied: 0, rate: new Rate() };
          edge.count++;
          edge.rate.add(1);
          s.edges.set(key, edge);
          if (s.organism) s.organism.totalMessages++;
        }
        break;
      }
      case 'peer_denied': {
        const key = `${String(frame['from'])}\u0000${String(frame['to'])}`;
        const edge = s.edges.get(key) ?? { from: String(frame['from']), to: String(frame['to']), count: 0, denied: 0, rate: new Rate() };
        edge.denied++;
        s.edges.set(key, edge);
        break;
      }
      case 'agent_state': {
        const a = s.agents.get(frame['agent'] as string);
        if (a) s.agents.set(a.name, { ...a, state: frame['state'] as AgentInfo['state'], currentThread: (frame['currentThread'] as string | null) ?? null, lastActivity: frame.timestamp });
        break;
      }
      case 'thread_created':
      case 'thread_updated': {
        const t = frame['thread'] as ThreadInfo;
        s.threads.set(t.id, t);
        if (s.organism) s.organism.activeThreads = [...s.threads.values()].filter((x) => x.status === 'active').length;
        break;
      }
      case 'usage': {
        const u = frame['usage'] as { totalTokens?: number };
        s.tokenRate.add(u.totalTokens ?? 0);
        break;
      }
      case 'inbox_opened':
      case 'inbox_closed': {
        if (!s.inbox) break;
        const step = frame.event === 'inbox_opened' ? 1 : -1;
        const kind = frame.event === 'inbox_opened' ? frame.item.kind : frame.kind;
        s.inbox = {
          open: Math.max(0, s.inbox.open + step),
          asks: Math.max(0, s.inbox.asks + (kind === 'ask' ? step : 0)),
          approvals: Math.max(0, s.inbox.approvals + (kind === 'approval' ? step : 0)),
        };
        break;
      }
      case 'organism_status':
        if (s.organism) s.organism.status = frame['status'] as string;
        break;
      case 'worker':
      case 'deliveries_taken_back':
        s.processEvents = [frame, ...s.processEvents].slice(0, PROCESS_EVENTS);
        break;
    }
    for (const l of this.eventListeners) l(frame);
    this.schedule();
  }

  private seedEdges(list: Array<{ from: string; to: string; messages: number; denied: number }>): void {
    for (const e of list) {
      const key = `${e.from}\u0000${e.to}`;
      const edge = this.state.edges.get(key) ?? { from: e.from, to: e.to, count: 0, denied: 0, rate: new Rate() };
      edge.count = Math.max(edge.count, e.messages);
      edge.denied = Math.max(edge.denied, e.denied);
      this.state.edges.set(key, edge);
    }
    this.schedule();
  }

  private set(patch: Partial<LiveState>): void {
    Object.assign(this.state, patch);
    this.schedule();
  }

  /** One notification per animation frame, however many events arrived. */
  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.state = { ...this.state, version: this.state.version + 1 };
      for (const l of this.listeners) l();
    });
  }
}

let store: LiveStore | null = null;
export function setLiveStore(s: LiveStore | null): void {
  store = s;
}
export function liveStore(): LiveStore | null {
  return store;
}

const EMPTY = LiveStore.empty();
const noop = () => () => {};

/** The live state, re-rendered at most once per animation frame. */
export function useLive(): LiveState {
  return useSyncExternalStore(store ? store.subscribe : noop, () => store?.state ?? EMPTY);
}

/**
 * The organism's status as the console shows it. The pump says `stopping` while it drains and
 * `stopped` once drained, but the process still answers until its connections close (a SIGHUP
 * or POST /organism/restart hands over to the next server process): both are `draining` while
 * this socket is up, and `stopped` only once it is gone.
 */
export function organismPhase(status: string | null | undefined, connection: ConnectionState): string | null {
  if (!status) return null;
  if (status === 'stopping') return 'draining';
  if (status === 'stopped' && connection === 'open') return 'draining';
  return status;
}
