import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api, type ScheduleInfo, type WebhookDeliveryInfo } from '../api';
import { useTick } from '../tick';
import { ErrorBox, fmt, Loading, StateBadge } from '../ui';

/** Ticks and deliveries come with no event: the lists are read again this often. */
const REFRESH_MS = 2000;

function when(s: ScheduleInfo): string {
  return s.cron !== null ? `cron ${s.cron} (${s.timezone ?? 'UTC'})` : `every ${s.every}`;
}

/** One tick: its outcome, its time, and a link to the thread it started. */
function Tick({ tick }: { tick: ScheduleInfo['ticks'][number] }) {
  const outcome = tick.outcome ?? 'claimed';
  return (
    <li className={`tick tick-${outcome}`} title={tick.error ?? (tick.late ? 'catch-up after downtime' : undefined)}>
      <StateBadge state={outcome} /> {fmt.time(tick.tickAt)}
      {tick.late ? ' (late)' : ''}{' '}
      {tick.threadId ? (
        <Link to="/threads/$threadId" params={{ threadId: tick.threadId }}>
          {fmt.short(tick.threadId)}
        </Link>
      ) : null}
    </li>
  );
}

function DeliveryRow({ d }: { d: WebhookDeliveryInfo }) {
  return (
    <tr data-delivery={d.id} className={`delivery-${d.state}`}>
      <td>{d.webhook}</td>
      <td>{d.event}</td>
      <td>
        <StateBadge state={d.state} />
      </td>
      <td>{fmt.int(d.attempts)}</td>
      <td>{d.lastStatus ?? '—'}</td>
      <td>{d.lastError ?? '—'}</td>
      <td>{d.state === 'pending' ? fmt.dateTime(d.nextAttemptAt) : fmt.dateTime(d.deliveredAt)}</td>
      <td>{fmt.ago(d.createdAt)}</td>
    </tr>
  );
}

/**
 * Schedules (organism.yaml and added at run time) with their next run and latest ticks, each a
 * link to its thread; the webhooks with their delivery counts and the recent deliveries, failures
 * with the receiver's last status or error (issue 31).
 */
export function SchedulesView() {
  useTick(1000);
  const schedules = useQuery({ queryKey: ['schedules'], queryFn: api.schedules, refetchInterval: REFRESH_MS });
  const webhooks = useQuery({ queryKey: ['webhooks'], queryFn: api.webhooks, refetchInterval: REFRESH_MS });
  return (
    <div>
      <h1>Schedules</h1>
      <ErrorBox error={schedules.error} />
      {!schedules.data ? (
        <Loading what="schedules" />
      ) : schedules.data.schedules.length === 0 ? (
        <p className="muted">
          No schedule: add one under <code>schedules:</code> in organism.yaml or with <code>POST /api/v1/schedules</code>.
        </p>
      ) : (
        <table aria-label="Schedules">
          <thead>
            <tr>
              <th>Name</th>
              <th>When</th>
              <th>To</th>
              <th>Source</th>
              <th>Next run</th>
              <th>Latest ticks</th>
            </tr>
          </thead>
          <tbody>
            {schedules.data.schedules.map((s) => (
              <tr key={s.name} data-schedule={s.name}>
                <td>{s.name}</td>
                <td>
                  <code>{when(s)}</code>
                  {s.catchUp ? '' : ' · no catch-up'}
                </td>
                <td>
                  <Link to="/agents/$name" params={{ name: s.to }}>
                    {s.to}
                  </Link>
                </td>
                <td>{s.source === 'config' ? 'organism.yaml' : 'API'}</td>
                <td>{s.nextRunAt ? `${fmt.dateTime(s.nextRunAt)} UTC` : '—'}</td>
                <td>
                  {s.ticks.length === 0 ? (
                    <span className="muted">none yet</span>
                  ) : (
                    <ul className="ticks" aria-label={`Ticks of ${s.name}`}>
                      {s.ticks.map((t) => (
                        <Tick key={t.tickAt} tick={t} />
                      ))}
                    </ul>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Webhooks</h2>
      <ErrorBox error={webhooks.error} />
      {!webhooks.data ? (
        <Loading what="webhooks" />
      ) : webhooks.data.webhooks.length === 0 ? (
        <p className="muted">
          No webhook: add one under <code>webhooks:</code> in organism.yaml.
        </p>
      ) : (
        <>
          <table aria-label="Webhooks">
            <thead>
              <tr>
                <th>Name</th>
                <th>URL</th>
                <th>Events</th>
                <th>Pending</th>
                <th>Delivered</th>
                <th>Failed</th>
                <th>Secret</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.data.webhooks.map((w) => (
                <tr key={w.name} data-webhook={w.name}>
                  <td>{w.name}</td>
                  <td>
                    <code>{w.url}</code>
                  </td>
                  <td>{w.events.join(', ')}</td>
                  <td>{fmt.int(w.pending)}</td>
                  <td>{fmt.int(w.delivered)}</td>
                  <td className={w.failed > 0 ? 'failed-count' : undefined}>{fmt.int(w.failed)}</td>
                  <td>{w.secretProblem ?? 'ok'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <table aria-label="Recent deliveries">
            <thead>
              <tr>
                <th>Webhook</th>
                <th>Event</th>
                <th>State</th>
                <th>Attempts</th>
                <th>Last status</th>
                <th>Last error</th>
                <th>Next try / delivered</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.data.deliveries.map((d) => (
                <DeliveryRow key={d.id} d={d} />
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
