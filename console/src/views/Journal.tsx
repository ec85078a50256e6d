import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { api, type JournalEntry } from '../api';
import { Pager, ThreadLink } from '../lists';
import { BulkBar, type BulkResult, type BulkTarget, Summary } from './find/BulkBar';
import { FilterBar } from './find/FilterBar';
import { SavedViews } from './find/SavedViews';
import { compact, type JournalSearch } from './find/search';
import { useSelection } from './find/selection';
import { useIsOperator, useRefetchOn } from '../session';
import { ErrorBox, fmt, OpButton, StateBadge } from '../ui';

const PAGE = 50;
const STATES = ['PENDING', 'DISPATCHED', 'AWAITING', 'ACKED', 'FAILED'];

export function JournalView() {
  const filter = useSearch({ strict: false }) as JournalSearch;
  const filterKey = JSON.stringify(filter);
  const navigate = useNavigate();
  const operator = useIsOperator();
  const qc = useQueryClient();
  const [offset, setOffset] = useState(0);
  const sel = useSelection(filterKey);
  const [outcome, setOutcome] = useState<BulkResult | null>(null);
  const setFilter = (next: JournalSearch) => (setOffset(0), void navigate({ to: '/journal', search: next }));

  const q = useQuery({
    queryKey: ['journal', filterKey, offset],
    queryFn: () => api.journal({ ...filter, threadId: filter.threadId?.trim(), limit: PAGE, offset }),
    placeholderData: keepPreviousData,
  });
  const stats = useQuery({ queryKey: ['journal-stats'], queryFn: api.journalStats });
  useRefetchOn((f) => f.event === 'journal_failed' || f.event === 'message', [['journal'], ['journal-stats']], 1500);

  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['journal'] });
    void qc.invalidateQueries({ queryKey: ['journal-stats'] });
  };
  // The selected entries, or every FAILED entry the filter matches (the server applies the same filter);
  // one request, whose answer says what was redelivered and what was not, with the reasons.
  const redeliverMany = async (target: BulkTarget): Promise<BulkResult> => {
    const { agent, threadId, text, startTime, endTime } = filter;
    const r = await api.redeliverMany('ids' in target ? { messageIds: target.ids } : { filter: compact({ agent, threadId, text, startTime, endTime }) });
    return { ...r, done: r.redelivered };
  };
  const redeliverOne = useMutation({
    mutationFn: (id: string) => redeliverMany({ ids: [id] }),
    onSuccess: (r) => (setOutcome(r), refresh()),
  });

  const entries = q.data?.entries ?? [];
  // A FAILED entry of a killed thread cannot be redelivered (the API refuses it): its thread's
  // status is looked up (one request per thread on the page) and it is not offered.
  const threadIds = [...new Set(entries.filter((e) => e.deliveryState === 'FAILED').map((e) => e.threadId))];
  const threads = useQueries({ queries: threadIds.map((id) => ({ queryKey: ['thread', id], queryFn: () => api.thread(id) })) });
  const killed = new Set(threads.flatMap((t) => (t.data?.status === 'killed' ? [t.data.id] : [])));
  const redeliverable = (e: JournalEntry) => e.deliveryState === 'FAILED' && !killed.has(e.threadId);
  useRefetchOn((f) => f.event === 'thread_updated', [['thread']], 1500);
  const failed = entries.filter(redeliverable).map((e) => e.id);
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
      <FilterBar search={filter} onChange={setFilter} statusKey="state" statusLabel="State" statuses={STATES} withThread />
      <SavedViews list="journal" search={filter} onApply={setFilter} />
      <BulkBar
        verb="Redeliver"
        done="Redelivered"
        noun="failed entries"
        selected={sel.selected}
        matching={total}
        allMatching={sel.allMatching}
        canSelectAll={filter.state === 'FAILED'}
        onAllMatching={sel.setAllMatching}
        run={redeliverMany}
        onDone={() => (sel.clear(), setOutcome(null), refresh())}
      />
      {outcome && <Summary result={outcome} done="Redelivered" />}
      {q.data?.searchTruncated && <p className="muted">The text search read the newest 100,000 journal entries; older ones were not searched.</p>}
      <ErrorBox error={q.error ?? redeliverOne.error} />
      <table aria-label="Journal entries">
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select every failed entry on this page"
                disabled={!operator || failed.length === 0}
                checked={sel.allMatching || (failed.length > 0 && failed.every((id) => sel.selected.has(id)))}
                onChange={(e) => sel.setPage(failed, e.target.checked)}
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
                {redeliverable(e) && (
                  <input type="checkbox" aria-label={`Select ${e.id}`} disabled={!operator} checked={sel.allMatching || sel.selected.has(e.id)} onChange={() => sel.toggle(e.id)} />
                )}
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
                {redeliverable(e) ? (
                  <OpButton aria-label={`Redeliver ${e.id}`} disabled={redeliverOne.isPending} onClick={() => redeliverOne.mutate(e.id)}>
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
