import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type Counts } from '../api';
import { ThreadLink } from '../lists';
import { useRefetchOn } from '../session';
import { Card, Chart, ErrorBox, fmt, Loading } from '../ui';

const day = (d: Date) => d.toISOString().slice(0, 10);

function CountsTable({ rows, keyLabel }: { rows: Array<Counts & { key: string }>; keyLabel: string }) {
  return (
    <table>
      <thead>
        <tr>
          <th>{keyLabel}</th>
          <th>Calls</th>
          <th>Tokens</th>
          <th>In</th>
          <th>Out</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key}>
            <td>{r.key}</td>
            <td>{fmt.int(r.requestCount)}</td>
            <td>{fmt.int(r.totalTokens)}</td>
            <td>{fmt.int(r.promptTokens)}</td>
            <td>{fmt.int(r.completionTokens)}</td>
            <td>{fmt.usd(r.totalCost)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Bars({ rows, title }: { rows: Array<Counts & { key: string }>; title: string }) {
  if (rows.length === 0) return <p className="muted">Nothing recorded yet.</p>;
  return <Chart title={title} height={180} bars labels={rows.map((r) => r.key)} x={rows.map((_, i) => i)} series={[{ label: 'tokens', values: rows.map((r) => r.totalTokens) }]} />;
}

export function UsageView() {
  const today = new Date();
  const [from, setFrom] = useState(day(new Date(today.getTime() - 13 * 86400_000)));
  const [to, setTo] = useState(day(today));
  // endTime is exclusive: the day after the chosen last day.
  const range = { startTime: `${from}T00:00:00Z`, endTime: new Date(Date.parse(`${to}T00:00:00Z`) + 86400_000).toISOString() };
  const usage = useQuery({ queryKey: ['usage'], queryFn: api.usage });
  const daily = useQuery({ queryKey: ['daily', from, to], queryFn: () => api.daily(range) });
  const billing = useQuery({ queryKey: ['billing', from, to], queryFn: () => api.billing(range) });
  const budgets = useQuery({ queryKey: ['budgets'], queryFn: api.budgets });
  useRefetchOn((f) => f.event === 'usage' || f.event === 'budget_warning', [['usage'], ['daily'], ['billing'], ['budgets']], 2000);

  const u = usage.data?.usage;
  const byAgent = (u?.byAgent ?? []).map((a) => ({ ...a, key: a.agentId }));
  const byModel = (u?.byModel ?? []).map((m) => ({ ...m, key: m.model }));
  // Every day of the range, zero where nothing was used.
  const days: string[] = [];
  for (let t = Date.parse(range.startTime); t < Date.parse(range.endTime); t += 86400_000) days.push(day(new Date(t)));
  const perDay = new Map((daily.data?.days ?? []).map((d) => [d.date, d]));
  const orgs = Object.entries(billing.data?.byOrg ?? {}).map(([key, c]) => ({ ...c, key }));
  const sortedBudgets = [...(budgets.data?.threads ?? [])].sort((a, b) => Number(b.isExhausted) - Number(a.isExhausted) || b.percentUsed - a.percentUsed);

  return (
    <div className="grid">
      <h1 className="span-all">Usage</h1>
      <ErrorBox error={usage.error ?? daily.error ?? billing.error ?? budgets.error} />
      <Card title="Totals" className="span-all">
        {u ? (
          <dl className="inline-dl">
            <dt>LLM calls</dt>
            <dd>{fmt.int(u.totals.requestCount)}</dd>
            <dt>Tokens</dt>
            <dd>{fmt.int(u.totals.totalTokens)}</dd>
            <dt>Prompt</dt>
            <dd>{fmt.int(u.totals.promptTokens)}</dd>
            <dt>Completion</dt>
            <dd>{fmt.int(u.totals.completionTokens)}</dd>
            <dt>Cost</dt>
            <dd>{fmt.usd(u.totals.totalCost)}</dd>
            <dt>Mean latency</dt>
            <dd>{Math.round(u.totals.avgLatencyMs)} ms</dd>
            <dt>Unpriced calls</dt>
            <dd>{u.totals.unpricedRequests}</dd>
          </dl>
        ) : (
          <Loading what="usage" />
        )}
      </Card>
      <Card title="By agent" className="span-2">
        <Bars rows={byAgent} title="Tokens by agent" />
        <CountsTable rows={byAgent} keyLabel="Agent" />
      </Card>
      <Card title="By model" className="span-2">
        <Bars rows={byModel} title="Tokens by model" />
        <CountsTable rows={byModel} keyLabel="Model" />
      </Card>
      <Card title="Range" className="span-all">
        <div className="toolbar">
          <label>
            From
            <input type="date" value={from} max={to} onChange={(e) => e.target.value && setFrom(e.target.value)} />
          </label>
          <label>
            To
            <input type="date" value={to} min={from} onChange={(e) => e.target.value && setTo(e.target.value)} />
          </label>
        </div>
      </Card>
      <Card title="Daily tokens" className="span-2">
        <Chart
          title="Tokens per day"
          height={200}
          bars
          labels={days.map((d) => d.slice(5))}
          x={days.map((_, i) => i)}
          series={[{ label: 'tokens', values: days.map((d) => perDay.get(d)?.totalTokens ?? 0) }]}
        />
      </Card>
      <Card title="Billing by organization" className="span-2">
        {billing.data && (
          <p>
            Range total: {fmt.usd(billing.data.totalCost)} · {fmt.int(billing.data.totalTokens)} tokens · {fmt.int(billing.data.requestCount)} calls
          </p>
        )}
        <CountsTable rows={orgs} keyLabel="Organization" />
      </Card>
      <Card title="Thread budgets (most used first)" className="span-all">
        <table>
          <thead>
            <tr>
              <th>Thread</th>
              <th>Used</th>
              <th>Tokens</th>
              <th>Ceiling</th>
              <th>Remaining</th>
              <th>Exhausted</th>
            </tr>
          </thead>
          <tbody>
            {sortedBudgets.slice(0, 100).map((b) => (
              <tr key={b.threadId} className={b.isExhausted ? 'exhausted' : ''}>
                <td>
                  <ThreadLink id={b.threadId} />
                </td>
                <td>
                  <meter min={0} max={100} value={Math.min(100, b.percentUsed)} aria-label={`Budget used by ${b.threadId}`} /> {b.percentUsed}%
                </td>
                <td>{fmt.int(b.totalTokens)}</td>
                <td>{fmt.int(b.maxTokens)}</td>
                <td>{fmt.int(b.remaining)}</td>
                <td>{b.isExhausted ? 'yes' : 'no'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
    </div>
  );
}
