import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api } from '../api';
import { ThreadLink } from '../lists';
import { organismPhase, useLive } from '../live';
import { useRefetchOn } from '../session';
import { useTick } from '../tick';
import { Card, ErrorBox, fmt, Loading, Sparkline, StateBadge } from '../ui';
import { WorkersCard } from './Workers';

const MINUTES = 5;

function todayStart(): string {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())).toISOString();
}

export function OverviewView() {
  const live = useLive();
  useTick(1000);
  const organism = useQuery({ queryKey: ['organism'], queryFn: api.organism });
  const stats = useQuery({ queryKey: ['journal-stats'], queryFn: api.journalStats });
  const spend = useQuery({ queryKey: ['billing-today'], queryFn: () => api.billing({ startTime: todayStart() }) });
  useRefetchOn((f) => f.event === 'message' || f.event === 'journal_failed' || f.event === 'thread_updated' || f.event === 'deliveries_taken_back', [['organism'], ['journal-stats']], 2000);
  useRefetchOn((f) => f.event === 'usage', [['billing-today']], 2000);

  const o = organism.data;
  const j = stats.data ?? live.journal;
  const msgs = live.messageRate.series(MINUTES * 60 - 1);
  const tokens = live.tokenRate.series(MINUTES * 60 - 1);
  const active = [...live.threads.values()].filter((t) => t.status === 'active').sort((a, b) => b.lastActivity.localeCompare(a.lastActivity));

  return (
    <div className="grid">
      <h1 className="span-all">Overview</h1>
      <ErrorBox error={organism.error ?? stats.error} />
      <Card title="Organism">
        {!o ? (
          <Loading what="organism" />
        ) : (
          <dl>
            <dt>Name</dt>
            <dd>{o.name}</dd>
            <dt>Status</dt>
            <dd>
              <StateBadge state={organismPhase(live.organism?.status ?? o.status, live.connection) ?? o.status} />
            </dd>
            <dt>Uptime</dt>
            <dd>{fmt.duration(o.uptimeSeconds)}</dd>
            <dt>Boot id</dt>
            <dd>
              <code>{o.bootId}</code>
            </dd>
            <dt>Version</dt>
            <dd>{o.version}</dd>
            <dt>Messages</dt>
            <dd>{fmt.int(o.totalMessages)}</dd>
          </dl>
        )}
      </Card>
      <Card title="Last recovery">
        {j?.lastRecovery ? (
          <dl>
            <dt>At</dt>
            <dd>{fmt.dateTime(j.lastRecovery.at)}</dd>
            <dt>Took</dt>
            <dd>{Math.round(j.lastRecovery.durationMs)} ms</dd>
            <dt>Pending found</dt>
            <dd>{j.lastRecovery.pending}</dd>
            <dt>Redelivered</dt>
            <dd>{j.lastRecovery.redelivered}</dd>
            <dt>Failed (max attempts)</dt>
            <dd>{j.lastRecovery.failedMaxAttempts}</dd>
          </dl>
        ) : (
          <p className="muted">No recovery report yet.</p>
        )}
      </Card>
      <Card title="Journal">
        {j ? (
          <>
            <dl>
              {(['PENDING', 'DISPATCHED', 'AWAITING', 'ACKED', 'FAILED'] as const).map((s) => (
                <div key={s} className="row">
                  <dt>
                    <StateBadge state={s} />
                  </dt>
                  <dd>{fmt.int(j.counts[s])}</dd>
                </div>
              ))}
              <dt>Oldest pending</dt>
              <dd>{j.oldestPendingAgeMs === null ? 'none' : fmt.duration(j.oldestPendingAgeMs / 1000)}</dd>
            </dl>
            <p>
              <Link to="/journal" search={{ state: 'FAILED' }}>
                {fmt.int(j.counts.FAILED)} failed deliveries
              </Link>
            </p>
          </>
        ) : (
          <Loading what="journal" />
        )}
      </Card>
      <Card title="Spend today">
        {spend.data ? (
          <dl>
            <dt>Cost</dt>
            <dd className="big">{fmt.usd(spend.data.totalCost)}</dd>
            <dt>Tokens</dt>
            <dd>{fmt.int(spend.data.totalTokens)}</dd>
            <dt>LLM calls</dt>
            <dd>{fmt.int(spend.data.requestCount)}</dd>
          </dl>
        ) : (
          <ErrorBox error={spend.error} />
        )}
      </Card>
      <WorkersCard />
      <Card title={`Messages/s (last ${MINUTES} min)`} className="span-2">
        <p className="big">{live.messageRate.mean(10).toFixed(1)} /s</p>
        <Sparkline values={msgs} title="Messages per second" />
      </Card>
      <Card title={`Tokens/s (last ${MINUTES} min)`} className="span-2">
        <p className="big">{live.tokenRate.mean(10).toFixed(0)} /s</p>
        <Sparkline values={tokens} title="Tokens per second" />
      </Card>
      <Card title={`Active threads (${active.length})`} className="span-all">
        {active.length === 0 ? (
          <p className="muted">No active threads.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Thread</th>
                <th>Participants</th>
                <th>Messages</th>
                <th>Last activity</th>
              </tr>
            </thead>
            <tbody>
              {active.slice(0, 10).map((t) => (
                <tr key={t.id}>
                  <td>
                    <ThreadLink id={t.id} />
                  </td>
                  <td>{t.participants.join(', ')}</td>
                  <td>{t.messageCount}</td>
                  <td>{fmt.time(t.lastActivity)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
