import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { api, type JournalEntry, type MessageRecord, type ThreadInfo, type UsageEvent } from '../api';
import { Pager, ThreadLink } from '../lists';
import { useIsOperator, useRefetchOn } from '../session';
import { BulkBar, type BulkResult, type BulkTarget } from './find/BulkBar';
import { FilterBar } from './find/FilterBar';
import { SavedViews } from './find/SavedViews';
import { compact, type ThreadSearch } from './find/search';
import { useSelection } from './find/selection';
import { Card, Confirm, ErrorBox, fmt, Json, Loading, OpButton, StateBadge } from '../ui';
import { InboxItemCard, useThreadInbox } from './Inbox';
import { Waterfall } from './thread/Waterfall';
import { ThreadLlmCalls } from './thread/LlmCallInspector';
import { HoldPanel } from './thread/Hold';
import { ForkPanel } from './thread/Fork';

const PAGE = 25;
const STATUSES = ['active', 'waiting', 'held', 'completed', 'error', 'killed'];

export function ThreadsView() {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const operator = useIsOperator();
  const filter = useSearch({ strict: false }) as ThreadSearch;
  const filterKey = JSON.stringify(filter);
  const [offset, setOffset] = useState(0);
  const sel = useSelection(filterKey);
  const [search, setSearch] = useState('');
  const [searchError, setSearchError] = useState<unknown>(null);
  const setFilter = (next: ThreadSearch) => (setOffset(0), void navigate({ to: '/threads', search: next }));
  const q = useQuery({
    queryKey: ['threads', filterKey, offset],
    queryFn: () => api.threads({ ...filter, limit: PAGE, offset }),
    placeholderData: keepPreviousData,
  });
  // A new or changed thread refreshes the page from the API (no polling).
  useRefetchOn((f) => f.event === 'thread_created' || f.event === 'thread_updated', [['threads']], 500);

  const open = async (e: FormEvent) => {
    e.preventDefault();
    setSearchError(null);
    const id = search.trim();
    if (!id) return;
    try {
      await api.thread(id);
      void navigate({ to: '/threads/$threadId', params: { threadId: id } });
    } catch (err) {
      setSearchError(err);
    }
  };
  // Kills what is selected, or every thread of the filter's unfinished status (active or waiting) it matches (the server applies the same filter).
  const kill = async (target: BulkTarget): Promise<BulkResult> => {
    const { agent, text, startTime, endTime } = filter;
    const status: 'active' | 'waiting' | 'held' = filter.status === 'waiting' || filter.status === 'held' ? filter.status : 'active';
    const r = await api.killMany('ids' in target ? { threadIds: target.ids } : { filter: compact({ agent, text, startTime, endTime, status }) });
    return { ...r, done: r.killed };
  };

  const total = q.data?.total ?? 0;
  const threads = q.data?.threads ?? [];
  const unfinished = (status: string) => status === 'active' || status === 'waiting' || status === 'held';
  const active = threads.filter((t) => unfinished(t.status)).map((t) => t.id);
  return (
    <div>
      <h1>Threads</h1>
      <FilterBar search={filter} onChange={setFilter} statusKey="status" statusLabel="Status" statuses={STATUSES} />
      <div className="toolbar">
        <SavedViews list="threads" search={filter} onApply={setFilter} />
        <form onSubmit={open} className="inline">
          <label>
            Thread id
            <input value={search} onChange={(e) => setSearch(e.target.value)} placeholder="open by id" />
          </label>
          <button type="submit">Open</button>
        </form>
      </div>
      <BulkBar
        verb="Kill"
        done="Killed"
        noun="threads"
        selected={sel.selected}
        matching={total}
        allMatching={sel.allMatching}
        canSelectAll={filter.status === 'active' || filter.status === 'waiting' || filter.status === 'held'}
        onAllMatching={sel.setAllMatching}
        run={kill}
        onDone={() => (sel.clear(), void qc.invalidateQueries({ queryKey: ['threads'] }))}
      />
      {q.data?.searchTruncated && <p className="muted">The text search read the newest 100,000 journal entries; older ones were not searched.</p>}
      <ErrorBox error={q.error ?? searchError} />
      <table aria-label="Threads">
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select every unfinished thread on this page"
                disabled={!operator || active.length === 0}
                checked={sel.allMatching || (active.length > 0 && active.every((id) => sel.selected.has(id)))}
                onChange={(e) => sel.setPage(active, e.target.checked)}
              />
            </th>
            <th>Thread</th>
            <th>Status</th>
            <th>Participants</th>
            <th>Messages</th>
            <th>Created</th>
            <th>Last activity</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          {threads.map((t) => (
            <tr key={t.id}>
              <td>
                {unfinished(t.status) && (
                  <input type="checkbox" aria-label={`Select ${t.id}`} disabled={!operator} checked={sel.allMatching || sel.selected.has(t.id)} onChange={() => sel.toggle(t.id)} />
                )}
              </td>
              <td>
                <ThreadLink id={t.id} />
              </td>
              <td>
                <StateBadge state={t.status} />
              </td>
              <td>{t.participants.join(', ')}</td>
              <td>{t.messageCount}</td>
              <td>{fmt.dateTime(t.createdAt)}</td>
              <td>{fmt.time(t.lastActivity)}</td>
              <td>{t.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager offset={offset} page={PAGE} total={total} onOffset={setOffset} />
    </div>
  );
}

/**
 * A thread's budget. A running thread's is in the list of live budgets (which also holds one an
 * operator set before the first LLM call); a finished thread keeps the one it had, read by id
 * once it has made an LLM call (a thread that never had a budget would be a 404). The ceiling can
 * be raised only where that can have an effect: while the thread runs, or when its budget stopped
 * it (an error thread with a `budget_exhausted` delivery, to redeliver after raising).
 */
function Budget({ thread, calls, stoppedByBudget }: { thread: ThreadInfo; calls: number; stoppedByBudget: boolean }) {
  const qc = useQueryClient();
  const threadId = thread.id;
  const running = thread.status === 'active';
  const list = useQuery({ queryKey: ['budget', threadId, 'live'], queryFn: api.budgets, enabled: running });
  const kept = useQuery({ queryKey: ['budget', threadId, 'kept'], queryFn: () => api.budget(threadId), enabled: !running && (calls > 0 || stoppedByBudget) });
  const b = running ? list.data?.threads.find((x) => x.threadId === threadId) : kept.data;
  const [value, setValue] = useState('');
  const raise = useMutation({
    mutationFn: (max: number) => api.setBudget(threadId, max),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['budget', threadId] });
      setValue('');
    },
  });
  const query = running ? list : kept;
  if (query.error) return <ErrorBox error={query.error} />;
  if (query.isLoading) return <Loading what="budget" />;
  if (!b) return <p className="muted">{running ? 'No budget yet: the thread has made no LLM call.' : 'No budget: the thread made no LLM call.'}</p>;
  const canRaise = running || (thread.status === 'error' && stoppedByBudget);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    raise.mutate(Number(value));
  };
  return (
    <>
      <meter min={0} max={100} value={Math.min(100, b.percentUsed)} aria-label="Budget used" />
      <dl>
        <dt>Used</dt>
        <dd>
          {fmt.int(b.totalTokens)} of {fmt.int(b.maxTokens)} tokens ({b.percentUsed}%)
        </dd>
        <dt>Remaining</dt>
        <dd>{fmt.int(b.remaining)}</dd>
        <dt>Exhausted</dt>
        <dd>{b.isExhausted ? 'yes' : 'no'}</dd>
      </dl>
      {!running && (
        <p className="muted">
          The thread has finished ({thread.status}): the budget it had.{canRaise ? ' Its budget stopped it: raise the ceiling, then redeliver the failed entry.' : ''}
        </p>
      )}
      {canRaise && (
        <form onSubmit={submit} className="inline">
          <label>
            New ceiling (tokens)
            <input type="number" min={0} step={1000} value={value} onChange={(e) => setValue(e.target.value)} required />
          </label>
          <OpButton type="submit" disabled={value === '' || raise.isPending}>
            Raise budget
          </OpButton>
        </form>
      )}
      <ErrorBox error={raise.error} />
    </>
  );
}

export function ThreadDetailView() {
  const { threadId = '' } = useParams({ strict: false }) as { threadId?: string };
  const qc = useQueryClient();
  const thread = useQuery({ queryKey: ['thread', threadId], queryFn: () => api.thread(threadId) });
  const messages = useQuery({ queryKey: ['thread-messages', threadId], queryFn: () => api.threadMessages(threadId, 100) });
  const journal = useQuery({ queryKey: ['thread-journal', threadId], queryFn: () => api.journal({ threadId, limit: 100, offset: 0 }) });
  const usage = useQuery({ queryKey: ['thread-usage', threadId], queryFn: () => api.usageHistory({ threadId, limit: 100 }) });
  const [confirm, setConfirm] = useState(false);
  const kill = useMutation({
    mutationFn: () => api.kill(threadId),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['thread', threadId] }),
    onSettled: () => setConfirm(false),
  });
  const concerns = (f: { event: string; [k: string]: unknown }) =>
    (f['message'] as MessageRecord | undefined)?.threadId === threadId ||
    (f['thread'] as { id?: string } | undefined)?.id === threadId ||
    (f['usage'] as { threadId?: string } | undefined)?.threadId === threadId ||
    f['threadId'] === threadId ||
    (f['item'] as { threadId?: string } | undefined)?.threadId === threadId;
  // Live while the thread runs: its own events refresh it.
  useRefetchOn(
    concerns,
    [
      ['thread', threadId],
      ['thread-messages', threadId],
      ['thread-journal', threadId],
      ['thread-usage', threadId],
      ['budget', threadId],
    ],
    400,
  );

  const waiting = useThreadInbox(threadId);

  if (thread.error) return <ErrorBox error={thread.error} />;
  if (!thread.data) return <Loading what="thread" />;
  const t = thread.data;
  const entries = new Map<string, JournalEntry>((journal.data?.entries ?? []).map((e) => [e.id, e]));
  const usageByMessage = new Map<string, UsageEvent[]>();
  for (const u of usage.data?.events ?? []) if (u.messageId) usageByMessage.set(u.messageId, [...(usageByMessage.get(u.messageId) ?? []), u]);

  return (
    <div className="grid">
      <h1 className="span-all">
        Thread <code>{t.id}</code> <StateBadge state={t.status} />
      </h1>
      <Card title="Thread">
        <dl>
          <dt>Participants</dt>
          <dd>{t.participants.join(', ')}</dd>
          <dt>Messages</dt>
          <dd>{t.messageCount}</dd>
          <dt>Created</dt>
          <dd>{fmt.dateTime(t.createdAt)}</dd>
          <dt>Last activity</dt>
          <dd>{fmt.dateTime(t.lastActivity)}</dd>
          {t.error && (
            <>
              <dt>Error</dt>
              <dd>{t.error}</dd>
            </>
          )}
          {t.forkedFrom && (
            <>
              <dt>Forked from</dt>
              <dd>
                <ThreadLink id={t.forkedFrom.threadId} short />{' '}
                <Link to="/threads/$threadId/compare/$otherId" params={{ threadId: t.forkedFrom.threadId, otherId: t.id }}>
                  compare
                </Link>
              </dd>
              {t.forkConfig && (
                <>
                  <dt>Runs under</dt>
                  <dd>
                    <code>{t.forkConfig}</code>
                  </dd>
                </>
              )}
            </>
          )}
        </dl>
        <OpButton className="danger" disabled={t.status !== 'active' && t.status !== 'waiting' && t.status !== 'held'} onClick={() => setConfirm(true)}>
          Kill thread
        </OpButton>
        <ForkPanel threadId={t.id} messages={messages.data?.messages ?? []} />
        <ErrorBox error={kill.error} />
        <Confirm open={confirm} title="Kill this thread?" confirmLabel="Kill" onConfirm={() => kill.mutate()} onCancel={() => setConfirm(false)}>
          <p>
            Thread <code>{t.id}</code> stops: queued messages are dropped and it accepts no more.
          </p>
        </Confirm>
      </Card>
      <Card title="Hold">
        <HoldPanel thread={t} />
      </Card>
      <Card title="Budget">
        <Budget
          thread={t}
          calls={usage.data?.total ?? 0}
          stoppedByBudget={(journal.data?.entries ?? []).some((e) => e.deliveryState === 'FAILED' && e.failureReason === 'budget_exhausted')}
        />
      </Card>
      <Card title="LLM calls" className="span-2">
        <table>
          <thead>
            <tr>
              <th>Time</th>
              <th>Agent</th>
              <th>Model</th>
              <th>Tokens (in/out)</th>
              <th>Latency</th>
              <th>Cost</th>
            </tr>
          </thead>
          <tbody>
            {(usage.data?.events ?? []).map((u) => (
              <tr key={u.id}>
                <td>{fmt.time(u.timestamp)}</td>
                <td>{u.agentId}</td>
                <td>{u.model}</td>
                <td>
                  {u.promptTokens}/{u.completionTokens}
                </td>
                <td>{Math.round(u.totalLatencyMs)} ms</td>
                <td>{u.estimatedCost === null ? 'unpriced' : fmt.usd(u.estimatedCost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Waterfall" className="span-all">
        <Waterfall threadId={threadId} />
      </Card>
      <Card title="LLM call inspector" className="span-all">
        <ThreadLlmCalls threadId={threadId} />
      </Card>
      <Card title="Timeline" className="span-all">
        <ErrorBox error={messages.error} />
        <ol className="timeline" aria-label="Timeline">
          {(messages.data?.messages ?? []).map((m) => {
            const e = entries.get(m.id);
            return (
              <li key={m.id} className={`msg state-${(e?.deliveryState ?? m.deliveryState).toLowerCase()}`}>
                <div className="msg-head">
                  <span className="time">{fmt.time(m.timestamp)}</span>
                  <strong>{m.from}</strong> → <strong>{m.to}</strong> <code>{m.payloadType}</code> <StateBadge state={e?.deliveryState ?? m.deliveryState} />
                  {e && <span className="muted">attempts {e.attempts}</span>}
                  {usageByMessage.get(m.id)?.map((u) => (
                    <span key={u.id} className="muted">
                      {' '}
                      · {u.agentId} LLM {u.totalTokens} tokens
                    </span>
                  ))}
                </div>
                <Json value={m.payload} />
                {e?.error && (
                  <p className="error">
                    {e.failureReason}: {e.error}
                  </p>
                )}
                {waiting.has(m.id) && (
                  <section className="waiting" aria-label="Waiting for a person">
                    <p>
                      Waits for a person: <Link to="/inbox">in the inbox</Link>
                    </p>
                    <InboxItemCard item={waiting.get(m.id)!} showThread={false} />
                  </section>
                )}
              </li>
            );
          })}
        </ol>
      </Card>
    </div>
  );
}
