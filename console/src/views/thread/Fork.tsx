import { useMutation, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { api, type Comparison, type MessageRecord } from '../../api';
import { ThreadLink } from '../../lists';
import { Card, ErrorBox, fmt, Loading, OpButton } from '../../ui';
import './fork.css';

/**
 * Time travel on the thread page (docs/time-travel.md): "Fork" opens a form to choose the
 * message the fork runs on from (its history is the messages before it) and, optionally, a
 * configuration file; once forked, the comparison of the thread and its fork is shown.
 */
export function ForkPanel({ threadId, messages }: { threadId: string; messages: readonly MessageRecord[] }) {
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [at, setAt] = useState('');
  const [configPath, setConfigPath] = useState('');
  const fork = useMutation({
    mutationFn: () => api.fork(threadId, { ...(at ? { atMessageId: at } : {}), ...(configPath.trim() ? { configPath: configPath.trim() } : {}) }),
    onSuccess: (r) => {
      if (r.threadId) void navigate({ to: '/threads/$threadId/compare/$otherId', params: { threadId, otherId: r.threadId } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    fork.mutate();
  };
  if (!open) {
    return (
      <OpButton onClick={() => setOpen(true)} disabled={messages.length === 0}>
        Fork
      </OpButton>
    );
  }
  return (
    <form className="fork-form" aria-label="Fork this thread" onSubmit={submit}>
      <label>
        Run on from message
        <select value={at} onChange={(e) => setAt(e.target.value)} aria-label="Fork at message">
          {messages.map((m, i) => (
            <option key={m.id} value={i === 0 ? '' : m.id}>
              {i + 1}. {m.from} → {m.to} ({m.payloadType})
            </option>
          ))}
        </select>
      </label>
      <label>
        Configuration file (optional)
        <input value={configPath} onChange={(e) => setConfigPath(e.target.value)} placeholder="the current configuration" aria-label="Configuration file" />
      </label>
      <p className="muted">The messages before the one chosen are copied; LLM calls are answered from this thread's record while their requests match.</p>
      <div className="actions">
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
        <button type="submit" disabled={fork.isPending}>
          Fork
        </button>
      </div>
      <ErrorBox error={fork.error} />
    </form>
  );
}

/** The thread and another (its fork) side by side: `/threads/{a}/compare/{b}`. Refreshes while either runs. */
export function CompareView() {
  const { threadId = '', otherId = '' } = useParams({ strict: false }) as { threadId?: string; otherId?: string };
  const cmp = useQuery({
    queryKey: ['compare', threadId, otherId],
    queryFn: () => api.compare(threadId, otherId),
    refetchInterval: (q) => {
      const d = q.state.data;
      return d && !running(d) ? false : 500;
    },
  });
  if (cmp.error) return <ErrorBox error={cmp.error} />;
  if (!cmp.data) return <Loading what="comparison" />;
  const c = cmp.data;
  return (
    <div className="grid compare">
      <h1 className="span-all">
        Compare <ThreadLink id={threadId} short /> with <ThreadLink id={otherId} short />
      </h1>
      <Card title="Summary" className="span-all">
        <p role="status" aria-label="Divergence">
          {c.firstDivergence === null ? 'Same messages' : `Messages diverge at #${c.firstDivergence + 1}`}
          {' · '}
          {c.firstCallDivergence === null ? 'same LLM requests' : `LLM requests diverge at ${c.firstCallDivergence.agent}'s call (#${c.firstCallDivergence.index + 1})`}
        </p>
        <table aria-label="Totals">
          <thead>
            <tr>
              <th />
              <th>Status</th>
              <th>Messages</th>
              <th>LLM calls (replayed)</th>
              <th>Tokens</th>
              <th>Charged tokens</th>
              <th>Cost</th>
              <th>LLM latency</th>
            </tr>
          </thead>
          <tbody>
            {(['a', 'b'] as const).map((k) => {
              const s = c[k];
              return (
                <tr key={k}>
                  <td>
                    <ThreadLink id={s.threadId} short />
                  </td>
                  <td>{s.status}</td>
                  <td>{s.messages}</td>
                  <td>
                    {s.llmCalls} ({s.replayedCalls})
                  </td>
                  <td>{s.tokens.total}</td>
                  <td>{s.chargedTokens}</td>
                  <td>{fmt.usd(s.cost)}</td>
                  <td>{Math.round(s.llmLatencyMs)} ms</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Card>
      <Card title="Messages side by side" className="span-all">
        <table className="side-by-side" aria-label="Messages side by side">
          <thead>
            <tr>
              <th>#</th>
              <th>
                <Link to="/threads/$threadId" params={{ threadId }}>
                  This thread
                </Link>
              </th>
              <th>
                <Link to="/threads/$threadId" params={{ threadId: otherId }}>
                  Other thread
                </Link>
              </th>
              <th>Differences</th>
            </tr>
          </thead>
          <tbody>
            {c.messages.map((m) => (
              <tr key={m.index} className={`${m.same ? 'same' : 'differs'}${c.firstDivergence === m.index ? ' first-divergence' : ''}`}>
                <td>{m.index + 1}</td>
                <td>{m.a ? `${m.a.from} → ${m.a.to} (${m.a.payloadType})` : '—'}</td>
                <td>{m.b ? `${m.b.from} → ${m.b.to} (${m.b.payloadType})` : '—'}</td>
                <td>
                  {m.same
                    ? 'same'
                    : m.payloadDiff.length > 0
                      ? m.payloadDiff.map((d) => (
                          <div key={d.path}>
                            <code>{d.path}</code>: {JSON.stringify(d.a)} → {JSON.stringify(d.b)}
                          </div>
                        ))
                      : 'differs'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {(c.toolCallsOnlyIn.a.length > 0 || c.toolCallsOnlyIn.b.length > 0) && (
          <p>
            Tool calls in only one: {c.toolCallsOnlyIn.a.map((t) => `${t.agent}.${t.tool} (this)`).join(', ')} {c.toolCallsOnlyIn.b.map((t) => `${t.agent}.${t.tool} (other)`).join(', ')}
          </p>
        )}
      </Card>
    </div>
  );
}

function running(c: Comparison): boolean {
  return [c.a.status, c.b.status].some((s) => s === 'active');
}
