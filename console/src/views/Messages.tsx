import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { OrganismSocket, WsFilter } from 'organism/client';
import type { MessageRecord } from '../api';
import { clientFor, getApiToken } from '../api';
import { ThreadLink } from '../lists';
import { fmt, StateBadge } from '../ui';

const BUFFER = 2000;
type Kind = 'agent' | 'thread' | 'payloadType';
interface Chip {
  kind: Kind;
  value: string;
}

/**
 * The live message stream of /ws/messages: filters are chips (sent as a `subscribe` command,
 * so the server filters), the stream can be paused (frames still arrive and are counted, not
 * shown), and the list keeps the newest BUFFER messages, rendered virtually.
 */
export function MessagesView() {
  const [chips, setChips] = useState<Chip[]>([]);
  const [kind, setKind] = useState<Kind>('agent');
  const [value, setValue] = useState('');
  const [paused, setPaused] = useState(false);
  const [rows, setRows] = useState<MessageRecord[]>([]);
  const [missed, setMissed] = useState(0);
  const [connected, setConnected] = useState(false);
  const socket = useRef<OrganismSocket | null>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const buffer = useRef<MessageRecord[]>([]);

  useEffect(() => {
    const token = getApiToken();
    if (!token) return;
    let flush: number | null = null;
    // organism/client's socket: token as a subprotocol, reconnects by itself after a drop.
    const live = clientFor(token).watch({ channel: 'messages', backoff: { initialMs: 1000, maxMs: 5000 } });
    socket.current = live;
    const off = [
      live.on('connected', () => {
        setConnected(true);
        sendFilter(live, chipsRef.current);
      }),
      live.on('disconnected', () => setConnected(false)),
      live.on('message', (f) => {
        if (pausedRef.current) return setMissed((n) => n + 1);
        buffer.current.push(f.message);
        // One state update per animation frame, however many frames arrived.
        flush ??= requestAnimationFrame(() => {
          flush = null;
          const batch = buffer.current;
          buffer.current = [];
          setRows((r) => merge(r, batch));
        });
      }),
    ];
    return () => {
      for (const o of off) o();
      if (flush !== null) cancelAnimationFrame(flush);
      live.close();
      socket.current = null;
    };
  }, []);

  const chipsRef = useRef(chips);
  chipsRef.current = chips;
  useEffect(() => {
    if (socket.current?.connected) sendFilter(socket.current, chips);
  }, [chips]);

  const add = (e: FormEvent) => {
    e.preventDefault();
    const v = value.trim();
    if (v && !chips.some((c) => c.kind === kind && c.value === v)) setChips([...chips, { kind, value: v }]);
    setValue('');
  };

  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => 34, overscan: 10 });

  return (
    <div>
      <h1>Messages</h1>
      <div className="toolbar">
        <form onSubmit={add} className="inline" aria-label="Add filter">
          <label>
            Filter by
            <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
              <option value="agent">agent</option>
              <option value="thread">thread</option>
              <option value="payloadType">payload type</option>
            </select>
          </label>
          <label>
            Value
            <input value={value} onChange={(e) => setValue(e.target.value)} />
          </label>
          <button type="submit">Add filter</button>
        </form>
        <button type="button" onClick={() => (setPaused(!paused), setMissed(0))} aria-pressed={paused}>
          {paused ? 'Resume stream' : 'Pause stream'}
        </button>
        <button type="button" onClick={() => setRows([])}>
          Clear
        </button>
        <span className="muted" role="status">
          {connected ? 'streaming' : 'connecting'} · {rows.length} shown (newest {BUFFER} kept){paused ? ` · paused, ${missed} not shown` : ''}
        </span>
      </div>
      <ul className="chips" aria-label="Filters">
        {chips.map((c) => (
          <li key={`${c.kind}:${c.value}`} className="chip">
            {c.kind}: {c.value}
            <button type="button" aria-label={`Remove filter ${c.kind} ${c.value}`} onClick={() => setChips(chips.filter((x) => x !== c))}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <div className="stream-head">
        <span>Time</span>
        <span>From → To</span>
        <span>Type</span>
        <span>State</span>
        <span>Thread</span>
        <span>Payload</span>
      </div>
      <div ref={scroller} className="stream" role="log" aria-label="Message stream">
        <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
          {virtual.getVirtualItems().map((v) => {
            const m = rows[v.index]!;
            return (
              <div key={v.key} className="stream-row" style={{ position: 'absolute', top: 0, transform: `translateY(${v.start}px)`, height: v.size }}>
                <span>{fmt.time(m.timestamp)}</span>
                <span>
                  {m.from} → {m.to}
                </span>
                <span>
                  <code>{m.payloadType}</code>
                </span>
                <span>
                  <StateBadge state={m.deliveryState} />
                </span>
                <span>
                  <ThreadLink id={m.threadId} short />
                </span>
                <span className="payload">{JSON.stringify(m.payload)}</span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

/**
 * The stream sends a frame per delivery state (PENDING, then DISPATCHED, ACKED or FAILED): a
 * message already shown has its row updated in place; new ones go on top, newest first.
 */
function merge(rows: readonly MessageRecord[], batch: readonly MessageRecord[]): MessageRecord[] {
  const latest = new Map<string, MessageRecord>();
  for (const m of batch) latest.set(m.id, m);
  const kept = rows.map((r) => {
    const next = latest.get(r.id);
    if (!next) return r;
    latest.delete(r.id);
    return next;
  });
  return [...[...latest.values()].reverse(), ...kept].slice(0, BUFFER);
}

/** The server filters: a `subscribe` command (the client keeps the filter for reconnects). */
function sendFilter(live: OrganismSocket, chips: Chip[]): void {
  const pick = (k: Kind) => chips.filter((c) => c.kind === k).map((c) => c.value);
  const filter: Partial<WsFilter> = { agents: pick('agent'), threads: pick('thread'), payloadTypes: pick('payloadType') };
  live.subscribe(filter).catch(() => {
    // The socket dropped meanwhile: the filter is sent again once it reconnects.
  });
}
