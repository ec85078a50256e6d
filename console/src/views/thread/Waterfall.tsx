// A thread's waterfall: its deliveries (each attempt's queue wait and handler time) and the LLM
// and MCP tool calls made inside them, on one time axis (GET /threads/{id}/waterfall: timings
// only, so viewers see it too). Plain divs positioned in percent of the thread's span; live
// while the thread runs (its events refetch it, and what still waits or runs grows to now).
import { useQuery } from '@tanstack/react-query';
import { OrganismApiError, type Waterfall as WireWaterfall } from 'organism/client';
import { useState, type CSSProperties } from 'react';
import { ApiError, clientFor } from '../../api';
import type { Frame } from '../../live';
import { useRefetchOn } from '../../session';
import { useTick } from '../../tick';
import { ErrorBox, fmt, Loading } from '../../ui';
import './waterfall.css';

type Data = WireWaterfall;
type Delivery = Data['deliveries'][number];
type Call = Data['calls'][number];
type Tool = Call['toolExecutions'][number];

/** Like api.ts's calls: the client's errors become ApiError (kept here so this view is one file). */
async function fetchWaterfall(threadId: string): Promise<{ data: Data; skewMs: number }> {
  try {
    const asked = Date.now();
    const data = await clientFor().threads.waterfall(threadId);
    // The server's clock against ours, so what runs ends at the server's "now" as time passes.
    return { data, skewMs: Date.parse(data.now) - (asked + Date.now()) / 2 };
  } catch (err) {
    if (err instanceof OrganismApiError) throw new ApiError(err.status, err.detail, err.errors ?? []);
    throw new ApiError(0, 'The server cannot be reached');
  }
}

/** One span of a bar: `kind` picks its colour (waterfall.css). */
interface Segment {
  start: number;
  end: number;
  kind: 'queue' | 'run' | 'ok' | 'failed' | 'interrupted' | 'llm' | 'llm-failed' | 'tool' | 'tool-failed';
  title: string;
}

/** One line of the waterfall: a delivery, an LLM call or a tool execution. */
interface Row {
  key: string;
  kind: 'delivery' | 'llm' | 'tool';
  label: string;
  segments: Segment[];
  /** Shown after the bar: failures, retries, repair rounds. */
  marks: Array<{ text: string; bad?: boolean }>;
  details: Array<[string, string]>;
}

const t = (iso: string | null) => (iso === null ? null : Date.parse(iso));

export function ms(n: number): string {
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
  return fmt.duration(n / 1000);
}

/** Each attempt of a delivery: queue wait then handler time, the latest one running up to `now`. */
function deliveryRow(d: Delivery, now: number): Row {
  const segments: Segment[] = [];
  const details: Array<[string, string]> = [];
  const marks: Row['marks'] = [];
  let queuedAt = t(d.createdAt)!;
  for (const a of d.earlierAttempts) {
    const dispatched = t(a.dispatchedAt);
    const ended = t(a.endedAt)!;
    if (dispatched !== null) {
      segments.push({ start: queuedAt, end: dispatched, kind: 'queue', title: `Attempt ${a.attempt}: queued ${ms(dispatched - queuedAt)}` });
      segments.push({
        start: dispatched,
        end: ended,
        kind: a.outcome === 'failed' ? 'failed' : 'interrupted',
        title: `Attempt ${a.attempt} ${a.outcome}${a.failureReason ? ` (${a.failureReason})` : ''} after ${ms(ended - dispatched)}`,
      });
      details.push([`Attempt ${a.attempt}`, `queued ${ms(dispatched - queuedAt)}, ran ${ms(ended - dispatched)}, ${a.outcome}${a.failureReason ? ` (${a.failureReason})` : ''}`]);
    } else {
      details.push([`Attempt ${a.attempt}`, `${a.outcome}${a.failureReason ? ` (${a.failureReason})` : ''} before it was dispatched`]);
    }
    if (a.error) details.push([`Attempt ${a.attempt} error`, a.error]);
    marks.push({ text: `attempt ${a.attempt} ${a.outcome}`, bad: true });
    queuedAt = t(a.requeuedAt)!;
  }
  const attempt = d.earlierAttempts.length + 1;
  const dispatched = t(d.dispatchedAt);
  const ended = t(d.ackedAt) ?? t(d.failedAt);
  const waitEnd = dispatched ?? ended ?? now;
  segments.push({ start: queuedAt, end: waitEnd, kind: 'queue', title: `${d.earlierAttempts.length ? `Attempt ${attempt}: ` : ''}queued ${ms(waitEnd - queuedAt)}` });
  details.push(['Queue wait', `${ms(waitEnd - queuedAt)}${dispatched === null && ended === null ? ' (waiting)' : ''}`]);
  if (dispatched !== null) {
    const end = ended ?? now;
    const kind = d.state === 'ACKED' ? 'ok' : d.state === 'FAILED' ? 'failed' : 'run';
    const verb = kind === 'ok' ? 'acked' : kind === 'failed' ? `failed${d.failureReason ? ` (${d.failureReason})` : ''}` : 'running';
    segments.push({ start: dispatched, end, kind, title: `Handler ${verb}: ${ms(end - dispatched)}` });
    details.push(['Handler', `${ms(end - dispatched)} ${verb}`]);
  }
  if (d.state === 'FAILED') marks.push({ text: `failed${d.failureReason ? `: ${d.failureReason}` : ''}`, bad: true });
  if (d.state === 'DISPATCHED') marks.push({ text: 'running' });
  if (d.state === 'PENDING') marks.push({ text: 'waiting' });
  if (d.state === 'AWAITING') marks.push({ text: 'waiting for a person' });
  if (attempt > 1) marks.push({ text: `attempt ${attempt}` });
  details.unshift(['State', `${d.state}, ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`]);
  if (d.error) details.push(['Error', d.error]);
  return { key: d.messageId, kind: 'delivery', label: `${d.from} → ${d.to}`, segments, marks, details: [['Message', d.messageId], ['Payload', d.payloadType], ...details] };
}

function callRow(c: Call): Row {
  const start = t(c.startedAt)!;
  const failed = c.error !== null;
  const marks: Row['marks'] = [];
  if (failed) marks.push({ text: 'LLM call failed', bad: true });
  if (c.attempt > 1) marks.push({ text: `retry ${c.attempt - 1}` });
  if (c.repair) marks.push({ text: 'repair' });
  if (c.usage) marks.push({ text: `${fmt.int(c.usage.totalTokens)} tokens` });
  const details: Array<[string, string]> = [
    ['Model', `${c.model} (${c.provider})`],
    ['Started', new Date(start).toISOString().slice(11, 23)],
    ['Latency', ms(c.latencyMs)],
    ['Attempt', String(c.attempt)],
  ];
  if (c.usage) details.push(['Tokens', `${fmt.int(c.usage.promptTokens)} in / ${fmt.int(c.usage.completionTokens)} out`]);
  details.push(['Cost', c.cost === null ? 'unpriced' : fmt.usd(c.cost)]);
  if (c.finishReason) details.push(['Finish reason', c.finishReason]);
  if (c.repair) details.push(['Repair', 'asked the model to fix an invalid answer']);
  if (c.error) details.push(['Error', c.error]);
  return {
    key: c.id,
    kind: 'llm',
    label: `LLM ${c.model} · ${c.agent}`,
    segments: [{ start, end: start + c.latencyMs, kind: failed ? 'llm-failed' : 'llm', title: `LLM call ${failed ? 'failed' : ''} ${ms(c.latencyMs)}`.replace('  ', ' ') }],
    marks,
    details,
  };
}

function toolRow(x: Tool): Row {
  const start = t(x.startedAt)!;
  const failed = x.isError || x.error !== null;
  const name = x.kind === 'code' ? x.tool : `${x.server}.${x.tool}`;
  const details: Array<[string, string]> = [
    ['Tool', x.kind === 'code' ? `${x.tool} (code, ${x.server})` : `${x.server} · ${x.tool} (MCP)`],
    ['Started', new Date(start).toISOString().slice(11, 23)],
    ['Duration', ms(x.durationMs)],
  ];
  if (x.error) details.push(['Error', x.error]);
  else if (x.isError) details.push(['Result', 'the tool reported an error']);
  return {
    key: x.id,
    kind: 'tool',
    label: name,
    segments: [{ start, end: start + x.durationMs, kind: failed ? 'tool-failed' : 'tool', title: `Tool ${name} ${failed ? 'failed ' : ''}${ms(x.durationMs)}` }],
    marks: failed ? [{ text: 'tool failed', bad: true }] : [],
    details,
  };
}

/** Deliveries in order, each followed by its LLM calls and their tool executions. */
export function waterfallRows(data: Data, now: number): Row[] {
  const byMessage = new Map<string, Call[]>();
  for (const c of data.calls) byMessage.set(c.messageId ?? '', [...(byMessage.get(c.messageId ?? '') ?? []), c]);
  const rows: Row[] = [];
  const withCalls = (calls: readonly Call[]) => {
    for (const c of calls) {
      rows.push(callRow(c));
      for (const x of c.toolExecutions) rows.push(toolRow(x));
    }
  };
  for (const d of data.deliveries) {
    rows.push(deliveryRow(d, now));
    withCalls(byMessage.get(d.messageId) ?? []);
    byMessage.delete(d.messageId);
  }
  // Calls whose delivery is not in this answer (pruned, or past the first 500).
  for (const calls of byMessage.values()) withCalls(calls);
  return rows;
}

/** About six round steps across the span (1, 2, 5 x 10^n ms). */
function ticks(span: number): { step: number; values: number[] } {
  const raw = span / 6;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  const step = [1, 2, 5, 10].map((k) => k * pow).find((s) => s >= raw) ?? pow * 10;
  const values: number[] = [];
  for (let v = 0; v <= span; v += step) values.push(v);
  return { step, values };
}

/** Where the time and the tokens went, in one line. */
function Summary({ data, rows, span }: { data: Data; rows: Row[]; span: number }) {
  const handler = rows.filter((r) => r.kind === 'delivery').reduce((n, r) => n + r.segments.filter((s) => s.kind !== 'queue').reduce((m, s) => m + s.end - s.start, 0), 0);
  const queued = rows.filter((r) => r.kind === 'delivery').reduce((n, r) => n + r.segments.filter((s) => s.kind === 'queue').reduce((m, s) => m + s.end - s.start, 0), 0);
  const llm = data.calls.reduce((n, c) => n + c.latencyMs, 0);
  const tools = data.calls.reduce((n, c) => n + c.toolExecutions.reduce((m, x) => m + x.durationMs, 0), 0);
  const tokens = data.calls.reduce((n, c) => n + (c.usage?.totalTokens ?? 0), 0);
  const cost = data.calls.reduce((n, c) => n + (c.cost ?? 0), 0);
  return (
    <p className="wf-summary">
      <span>Span {ms(span)}</span>
      <span>Queue wait {ms(queued)}</span>
      <span>Handlers {ms(handler)}</span>
      <span>
        LLM {ms(llm)} in {data.calls.length} call{data.calls.length === 1 ? '' : 's'}
      </span>
      {tools > 0 && <span>Tools {ms(tools)}</span>}
      <span>{fmt.int(tokens)} tokens</span>
      {cost > 0 && <span>{fmt.usd(cost)}</span>}
    </p>
  );
}

export function Waterfall({ threadId }: { threadId: string }) {
  const q = useQuery({ queryKey: ['thread-waterfall', threadId], queryFn: () => fetchWaterfall(threadId) });
  const [selected, setSelected] = useState<string | null>(null);
  // Live: every event of this thread (a message moving, an LLM call's usage, an agent taking it
  // up, the thread's own updates) refetches it.
  const concerns = (f: Frame) => {
    const x = f as unknown as Record<string, unknown>;
    return (
      (x['message'] as { threadId?: string } | undefined)?.threadId === threadId ||
      (x['thread'] as { id?: string } | undefined)?.id === threadId ||
      (x['usage'] as { threadId?: string } | undefined)?.threadId === threadId ||
      x['threadId'] === threadId ||
      x['currentThread'] === threadId
    );
  };
  useRefetchOn(concerns, [['thread-waterfall', threadId]], 300);
  const running = q.data?.data.deliveries.some((d) => d.state === 'PENDING' || d.state === 'DISPATCHED') ?? false;
  useTick(running ? 250 : 3_600_000);

  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what="waterfall" />;
  const { data, skewMs } = q.data;
  const now = running ? Date.now() + skewMs : Date.parse(data.now);
  const rows = waterfallRows(data, now);
  if (rows.length === 0) return <p className="muted">No delivery yet.</p>;
  const starts = rows.flatMap((r) => r.segments.map((s) => s.start));
  const ends = rows.flatMap((r) => r.segments.map((s) => s.end));
  const origin = Math.min(...starts);
  const span = Math.max(1, Math.max(...ends) - origin);
  const pct = (v: number) => `${(((v - origin) / span) * 100).toFixed(3)}%`;
  const width = (s: Segment) => `${(Math.max(0, s.end - s.start) / span) * 100}%`;
  const chosen = rows.find((r) => r.key === selected) ?? null;
  const axis = ticks(span);

  return (
    <div className="wf">
      <Summary data={data} rows={rows} span={span} />
      <div className="wf-legend" aria-hidden="true">
        <span className="wf-seg wf-queue" /> queue wait <span className="wf-seg wf-ok" /> handler <span className="wf-seg wf-run" /> running <span className="wf-seg wf-llm" /> LLM call{' '}
        <span className="wf-seg wf-tool" /> tool <span className="wf-seg wf-failed" /> failed <span className="wf-seg wf-interrupted" /> interrupted
      </div>
      <ul className="wf-grid" aria-label="Waterfall" style={{ '--wf-step': `${(axis.step / span) * 100}%` } as CSSProperties}>
        <li className="wf-axis" aria-hidden="true">
          <span className="wf-label" />
          <span className="wf-track">
            {axis.values.map((v) => (
              <span key={v} className="wf-tick" style={{ left: `${(v / span) * 100}%` }}>
                {v === 0 ? '0' : v < 1000 ? `${v} ms` : `${+(v / 1000).toFixed(3)} s`}
              </span>
            ))}
          </span>
          <span />
        </li>
        {rows.map((r) => (
          <li
            key={r.key}
            className={`wf-row wf-${r.kind}${selected === r.key ? ' selected' : ''}`}
            data-kind={r.kind}
            data-failed={r.marks.some((m) => m.bad) ? 'true' : undefined}
            aria-label={`${r.label}: ${r.segments.map((s) => s.title).join('; ')}`}
          >
            <button type="button" className="wf-label" title={r.label} onClick={() => setSelected(selected === r.key ? null : r.key)}>
              {r.label}
            </button>
            <button type="button" className="wf-track" tabIndex={-1} onClick={() => setSelected(r.key)}>
              {r.segments.map((s, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a row's segments are rebuilt in time order on every render; they have no identity
                <span key={i} className={`wf-seg wf-${s.kind}`} style={{ left: pct(s.start), width: width(s) }} title={s.title} />
              ))}
            </button>
            <span className="wf-marks">
              {r.marks.map((m) => (
                <span key={m.text} className={m.bad ? 'wf-mark bad' : 'wf-mark'}>
                  {m.text}
                </span>
              ))}
            </span>
          </li>
        ))}
      </ul>
      {data.truncated && <p className="muted">The thread has more deliveries or calls than one view holds: the first 500 deliveries and 1,000 calls are shown.</p>}
      {data.record === 'off' && <p className="muted">LLM calls are not recorded (llm.record: off): only deliveries are shown.</p>}
      {chosen && (
        <dl className="wf-details" aria-label="Waterfall details">
          <dt>{chosen.kind === 'delivery' ? 'Delivery' : chosen.kind === 'llm' ? 'LLM call' : 'Tool call'}</dt>
          <dd>{chosen.label}</dd>
          {chosen.details.map(([k, v]) => (
            <div key={k} className="wf-detail">
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      )}
    </div>
  );
}
