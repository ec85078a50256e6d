import { Link } from '@tanstack/react-router';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { MessageRecord } from '../api';
import { getApiToken } from '../api';
import { authProtocols, wsUrl } from '../live';
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
  const socket = useRef<WebSocket | null>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const buffer = useRef<MessageRecord[]>([]);

  useEffect(() => {
    const token = getApiToken();
    if (!token) return;
    let closed = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let flush: number | null = null;
    const connect = () => {
      const ws = new WebSocket(wsUrl('/ws/messages'), authProtocols(token));
      socket.current = ws;
      ws.onopen = () => setConnected(true);
      ws.onmessage = (e) => {
        const f = JSON.parse(String(e.data)) as { event: string; message?: MessageRecord };
        if (f.event === 'connected') sendFilter(ws, chipsRef.current);
        if (f.event !== 'message' || !f.message) return;
        if (pausedRef.current) return setMissed((n) => n + 1);
        buffer.current.push(f.message);
        // One state update per animation frame, however many frames arrived.
        flush ??= requestAnimationFrame(() => {
          flush = null;
          const batch = buffer.current;
          buffer.current = [];
          setRows((r) => [...batch.reverse(), ...r].slice(0, BUFFER));
        });
      };
      ws.onclose = () => {
        setConnected(false);
        if (!closed) timer = setTimeout(connect, 1000);
      };
    };
    connect();
    return () => {
      closed = true;
      if (timer) clearTimeout(timer);
      if (flush !== null) cancelAnimationFrame(flush);
      socket.current?.close();
    };
  }, []);

  const chipsRef = useRef(chips);
  chipsRef.current = chips;
  useEffect(() => {
    if (socket.current?.readyState === WebSocket.OPEN) sendFilter(socket.current, chips);
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
                  <Link to="/threads/$threadId" params={{ threadId: m.threadId }}>
                    <code>{fmt.short(m.threadId)}</code>
                  </Link>
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

function sendFilter(ws: WebSocket, chips: Chip[]): void {
  const pick = (k: Kind) => chips.filter((c) => c.kind === k).map((c) => c.value);
  ws.send(JSON.stringify({ cmd: 'subscribe', agents: pick('agent'), threads: pick('thread'), payloadTypes: pick('payloadType') }));
}
