// Small shared pieces: error boxes, role-aware buttons, charts (uPlot), badges, formatting.
import { useEffect, useRef, useState, type ButtonHTMLAttributes, type ReactNode } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ApiError } from './api';
import { useIsOperator, useReadOnlyReason } from './session';

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div className="error" role="alert">
      <strong>{e ? `Error ${e.status || ''}`.trim() : 'Error'}:</strong> {e ? e.detail : String((error as Error)?.message ?? error)}
      {e && e.errors.length > 0 && (
        <ul>
          {e.errors.map((x, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: one error response's list, never reordered; its items have no identity
            <li key={i}>
              <code>{[x.location, x.field].filter(Boolean).join('.')}</code>: {x.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** An operator action: for a viewer or an approver it is disabled and says why on hover. */
export function OpButton(props: ButtonHTMLAttributes<HTMLButtonElement>) {
  const operator = useIsOperator();
  const reason = useReadOnlyReason();
  if (operator) return <button type="button" {...props} />;
  return <button type="button" {...props} onClick={undefined} disabled title={reason} aria-description={reason} />;
}

export function Loading({ what }: { what: string }) {
  return <p className="muted">Loading {what}…</p>;
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge state-${state.toLowerCase()}`}>{state}</span>;
}

export function Card({ title, children, className }: { title: string; children: ReactNode; className?: string }) {
  return (
    <section className={`card ${className ?? ''}`} aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}

export const fmt = {
  int: (n: number) => n.toLocaleString('en-US'),
  usd: (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`,
  time: (iso: string | null) => (iso ? new Date(iso).toLocaleTimeString('en-GB') : '—'),
  dateTime: (iso: string | null) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) : '—'),
  ago: (iso: string | null) => (iso ? `${duration((Date.now() - Date.parse(iso)) / 1000)} ago` : '—'),
  duration,
  short: (id: string) => id.slice(-8),
};

function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/** The width of an element, following resizes. */
function useWidth(ref: React.RefObject<HTMLElement | null>): number {
  const [w, setW] = useState(0);
  useEffect(() => {
    if (!ref.current) return;
    const ro = new ResizeObserver((entries) => setW(Math.floor(entries[0]!.contentRect.width)));
    ro.observe(ref.current);
    return () => ro.disconnect();
  }, [ref]);
  return w;
}

/** A uPlot chart: `x` values and one or more series; redrawn in place when data changes. */
export function Chart({
  x,
  series,
  height,
  bars,
  labels,
  axes = true,
  title,
  xFormat,
}: {
  x: number[];
  series: Array<{ label: string; values: number[] }>;
  height: number;
  bars?: boolean;
  /** Category names for x (bar charts). */
  labels?: string[];
  axes?: boolean;
  title: string;
  /** How an x value is written on the axis (default: uPlot's own, two-level for times). */
  xFormat?: (v: number) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const width = useWidth(box);
  const data = [x, ...series.map((s) => s.values)] as uPlot.AlignedData;
  const shape = `${series.map((s) => s.label).join('|')}|${bars}|${(labels ?? []).join('|')}|${axes}`;

  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when its shape or size changes; data updates go through setData below.
  useEffect(() => {
    if (!box.current || width === 0) return;
    const stroke = cssVar('--accent');
    const text = cssVar('--muted');
    const grid = cssVar('--grid');
    const colors = [stroke, cssVar('--accent2')];
    const opts: uPlot.Options = {
      width,
      height,
      legend: { show: false },
      cursor: { show: axes, drag: { x: false, y: false } },
      scales: {
        x: bars ? { time: false, range: () => [-0.5, Math.max(x.length, 1) - 0.5] } : { time: !labels },
        // Counts start at zero, so bar heights compare honestly.
        y: { range: (_u: uPlot, _min: number, max: number) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: axes
        ? [
            {
              stroke: text,
              grid: { stroke: grid },
              ticks: { stroke: grid },
              ...(labels ? { values: (_u: uPlot, vals: number[]) => vals.map((v) => labels[v] ?? ''), splits: () => labels.map((_, i) => i) } : {}),
              ...(xFormat ? { values: (_u: uPlot, vals: number[]) => vals.map(xFormat), space: 70 } : {}),
            },
            { stroke: text, grid: { stroke: grid }, ticks: { stroke: grid }, size: 60 },
          ]
        : [{ show: false }, { show: false }],
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          stroke: colors[i % colors.length],
          fill: `${colors[i % colors.length]}33`,
          width: 1.5,
          points: { show: false },
          ...(bars ? { paths: uPlot.paths.bars!({ size: [0.6, 80] }) } : {}),
        })),
      ],
    };
    plot.current?.destroy();
    plot.current = new uPlot(opts, data, box.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, width, height]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return <div ref={box} className="chart" role="img" aria-label={title} />;
}

const clock = (seconds: number): string => new Date(seconds * 1000).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });

/** A small line of the last minutes (one point per second), with a time axis and a value axis. */
export function Sparkline({ values, title }: { values: number[]; title: string }) {
  const now = Math.floor(Date.now() / 1000);
  const x = values.map((_, i) => now - values.length + i);
  return <Chart x={x} series={[{ label: title, values }]} height={110} title={title} xFormat={clock} />;
}

/** A confirmation step before a destructive action (a modal <dialog>, keyboard-usable). */
export function Confirm({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} onCancel={onCancel} aria-label={title}>
      <h2>{title}</h2>
      {children}
      <div className="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
