import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { api, ApiError } from '../api';
import { AgentFilter, Filter, Pager, ThreadLink } from '../lists';
import { useIsOperator, useRefetchOn } from '../session';
import { ErrorBox, fmt, OpButton, StateBadge } from '../ui';

const PAGE = 50;
const STATES = ['PENDING', 'DISPATCHED', 'ACKED', 'FAILED'];

export function JournalView() {
  const search = useSearch({ strict: false }) as { state?: string };
  const navigate = useNavigate();
  const operator = useIsOperator();
  const qc = useQueryClient();
  const state = search.state ?? '';
  const [agent, setAgent] = useState('');
  const [threadId, setThreadId] = useState('');
  const [offset, setOffset] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [outcome, setOutcome] = useState<string | null>(null);

  const q = useQuery({
    queryKey: ['journal', state, agent, threadId, offset],
    queryFn: () => api.journal({ state: state || undefined, agent: agent || undefined, threadId: threadId.trim() || undefined, limit: PAGE, offset }),
    placeholderData: keepPreviousData,
  });
  const stats = useQuery({ queryKey: ['journal-stats'], queryFn: api.journalStats });
  useRefetchOn((f) => f.event === 'journal_failed' || f.event === 'message', [['journal'], ['journal-stats']], 1500);

  // Bulk redelivery is one API call per entry (what an operator would do with curl); each
  // outcome is reported, a failure does not stop the rest.
  const redeliver = useMutation({
    mutationFn: async (ids: string[]) => {
      const failures: string[] = [];
      for (const id of ids) {
        try {
          await api.redeliver(id);
        } catch (err) {
          failures.push(err instanceof ApiError ? err.detail : String(err));
        }
      }
      return { ok: ids.length - failures.length, failures };
    },
    onSuccess: (r) => {
      setOutcome(`Redelivered ${r.ok} of ${r.ok + r.failures.length}.${r.failures.length ? ` ${r.failures.join('; ')}` : ''}`);
      setSelected(new Set());
      void qc.invalidateQueries({ queryKey: ['journal'] });
      void qc.invalidateQueries({ queryKey: ['journal-stats'] });
    },
  });

  const entries = q.data?.entries ?? [];
  const failed = entries.filter((e) => e.deliveryState === 'FAILED');
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const s = stats.data;
  const total = q.data?.total ?? 0;

  return (
    <div>
      <h1>Journal</h1>
      {s && (
        // biome-ignore lint/a11y/useAriaPropsSupportedByRole: a real finding, left for a console change: a <p> has no role that takes a label (role="group" would)
        <p className="stats" aria-label="Journal stats">
          {STATES.map((k) => (
            <span key={k}>
              <StateBadge state={k} /> {fmt.int(s.counts[k as keyof typeof s.counts])}
            </span>
          ))}
          <span>oldest pending: {s.oldestPendingAgeMs === null ? 'none' : fmt.duration(s.oldestPendingAgeMs / 1000)}</span>
        </p>
      )}
      <div className="toolbar">
        <Filter label="State" value={state} options={STATES} onChange={(k) => (setOffset(0), void navigate({ to: '/journal', search: k ? { state: k } : {} }))} />
        <AgentFilter value={agent} onChange={(a) => (setAgent(a), setOffset(0))} />
        <label>
          Thread
          <input value={threadId} onChange={(e) => (setThreadId(e.target.value), setOffset(0))} placeholder="thread id" />
        </label>
        <OpButton disabled={selected.size === 0 || redeliver.isPending} onClick={() => redeliver.mutate([...selected])}>
          Redeliver selected ({selected.size})
        </OpButton>
      </div>
      {outcome && (
        <p role="status" className="notice">
          {outcome}
        </p>
      )}
      <ErrorBox error={q.error ?? redeliver.error} />
      <table aria-label="Journal entries">
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select every failed entry on this page"
                disabled={!operator || failed.length === 0}
                checked={failed.length > 0 && failed.every((e) => selected.has(e.id))}
                onChange={(e) => setSelected(e.target.checked ? new Set(failed.map((x) => x.id)) : new Set())}
              />
            </th>
            <th>Created</th>
            <th>State</th>
            <th>From → To</th>
            <th>Type</th>
            <th>Attempts</th>
            <th>Thread</th>
            <th>Reason / error</th>
            <th>Action</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id}>
              <td>
                {e.deliveryState === 'FAILED' && <input type="checkbox" aria-label={`Select ${e.id}`} disabled={!operator} checked={selected.has(e.id)} onChange={() => toggle(e.id)} />}
              </td>
              <td>{fmt.dateTime(e.createdAt)}</td>
              <td>
                <StateBadge state={e.deliveryState} />
              </td>
              <td>
                {e.from} → {e.to}
              </td>
              <td>
                <code>{e.payloadType}</code>
              </td>
              <td>{e.attempts}</td>
              <td>
                <ThreadLink id={e.threadId} short />
              </td>
              <td className="wrap">{e.failureReason ? `${e.failureReason}: ${e.error ?? ''}` : ''}</td>
              <td>
                {e.deliveryState === 'FAILED' && (
                  <OpButton aria-label={`Redeliver ${e.id}`} disabled={redeliver.isPending} onClick={() => redeliver.mutate([e.id])}>
                    Redeliver
                  </OpButton>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager offset={offset} page={PAGE} total={total} onOffset={setOffset} />
    </div>
  );
}
