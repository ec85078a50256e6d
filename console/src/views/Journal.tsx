import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { api, ApiError, type JournalEntry } from '../api';
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
  const [outcome, setOutcome] = useState<{ text: string; refused: boolean } | null>(null);

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
      setOutcome({ text: `Redelivered ${r.ok} of ${r.ok + r.failures.length}.${r.failures.length ? ` ${r.failures.join('; ')}` : ''}`, refused: r.failures.length > 0 });
      setSelected(new Set());
      void qc.invalidateQueries({ queryKey: ['journal'] });
      void qc.invalidateQueries({ queryKey: ['journal-stats'] });
    },
  });

  const entries = q.data?.entries ?? [];
  // A FAILED entry of a killed thread cannot be redelivered (the API answers 409): its thread's
  // status is looked up (one request per thread on the page) and it is not offered.
  const threadIds = [...new Set(entries.filter((e) => e.deliveryState === 'FAILED').map((e) => e.threadId))];
  const threads = useQueries({ queries: threadIds.map((id) => ({ queryKey: ['thread', id], queryFn: () => api.thread(id) })) });
  const killed = new Set(threads.flatMap((t) => (t.data?.status === 'killed' ? [t.data.id] : [])));
  const redeliverable = (e: JournalEntry) => e.deliveryState === 'FAILED' && !killed.has(e.threadId);
  useRefetchOn((f) => f.event === 'thread_updated', [['thread']], 1500);
  const failed = entries.filter(redeliverable);
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
      {outcome &&
        (outcome.refused ? (
          <p role="alert" className="error">
            {outcome.text}
          </p>
        ) : (
          <p role="status" className="notice">
            {outcome.text}
          </p>
        ))}
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
              <td>{redeliverable(e) && <input type="checkbox" aria-label={`Select ${e.id}`} disabled={!operator} checked={selected.has(e.id)} onChange={() => toggle(e.id)} />}</td>
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
                {redeliverable(e) ? (
                  <OpButton aria-label={`Redeliver ${e.id}`} disabled={redeliver.isPending} onClick={() => redeliver.mutate([e.id])}>
                    Redeliver
                  </OpButton>
                ) : e.deliveryState === 'FAILED' && killed.has(e.threadId) ? (
                  <span className="muted" title="A killed thread takes no more messages">
                    thread killed
                  </span>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager offset={offset} page={PAGE} total={total} onOffset={setOffset} />
    </div>
  );
}
