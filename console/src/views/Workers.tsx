import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api, type WorkerInfo } from '../api';
import { useLive, type Frame } from '../live';
import { useRefetchOn } from '../session';
import { useTick } from '../tick';
import { Card, ErrorBox, fmt, Loading, StateBadge } from '../ui';

/** How often the Workers view reads the list again without any event: heartbeats are no events. */
const HEARTBEAT_REFRESH_MS = 3000;

/** alive, stopped (it said so) or lost (silent past its lease: killed, frozen or cut off). */
export function workerStatus(w: WorkerInfo): 'alive' | 'stopped' | 'lost' {
  return w.alive ? 'alive' : w.stoppedAt ? 'stopped' : 'lost';
}

/** The processes of the organism, read again on worker events (and, `heartbeats`, every few seconds). */
function useWorkers(heartbeats: boolean) {
  const q = useQuery({ queryKey: ['workers'], queryFn: api.workers, refetchInterval: heartbeats ? HEARTBEAT_REFRESH_MS : false });
  useRefetchOn((f) => f.event === 'worker' || f.event === 'deliveries_taken_back', [['workers']], 300);
  return q;
}

/**
 * Every process of the organism: a cluster's serve and worker processes (PostgreSQL), or the
 * one embedded process, with its heartbeat, load and whether it is alive, stopped or lost.
 */
export function WorkersView() {
  useTick(1000);
  const q = useWorkers(true);
  const list = q.data?.workers ?? [];
  const counts = { alive: 0, stopped: 0, lost: 0 };
  for (const w of list) counts[workerStatus(w)]++;
  return (
    <div>
      <h1>Workers</h1>
      <ErrorBox error={q.error} />
      {!q.data ? (
        <Loading what="workers" />
      ) : (
        <>
          <p className="muted workers-summary">
            {q.data.shared
              ? `${list.length} process${list.length === 1 ? '' : 'es'} sharing the database: ${counts.alive} alive, ${counts.lost} lost, ${counts.stopped} stopped`
              : 'Embedded store: this one process is the organism.'}
          </p>
          <table aria-label="Workers">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Status</th>
                <th>Host</th>
                <th>PID</th>
                <th>Config</th>
                <th>Started</th>
                <th>Last heartbeat</th>
                <th>Concurrency</th>
                <th>In flight</th>
                <th>Lease</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id} data-worker={w.name} className={`worker-${workerStatus(w)}`} title={`id ${w.id}`}>
                  <td>{w.name}</td>
                  <td>{w.kind === 'serve' ? (w.handlers ? 'serve' : 'serve (handlers off)') : 'worker'}</td>
                  <td>
                    <StateBadge state={workerStatus(w)} />
                  </td>
                  <td>{w.host}</td>
                  <td>{w.pid}</td>
                  <td>
                    <code>{w.configHash}</code>
                  </td>
                  <td>{fmt.dateTime(w.startedAt)}</td>
                  <td>{w.stoppedAt ? `stopped ${fmt.ago(w.stoppedAt)}` : fmt.ago(w.lastHeartbeat)}</td>
                  <td>{w.concurrency ?? 'organism limit'}</td>
                  <td>{fmt.int(w.inFlight)}</td>
                  <td>{w.leaseSeconds === null ? 'none' : `${w.leaseSeconds} s`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

/** One worker event as a line of the overview. */
function eventText(f: Frame): string {
  if (f.event === 'deliveries_taken_back') {
    const n = f.retried + f.failed;
    const who = f.name ?? f.worker ?? 'nobody';
    return `${n} deliver${n === 1 ? 'y' : 'ies'} taken back from ${who}${f.failed > 0 ? ` (${f.failed} out of attempts, failed)` : ''}`;
  }
  if (f.event === 'worker') {
    const what = { joined: 'joined', stopped: 'stopped', lost: 'lost: no heartbeat within its lease', back: 'heartbeating again' }[f.change];
    return `${f.worker.kind} ${f.worker.name} ${what}`;
  }
  return f.event;
}

/** The overview's card: how many processes are alive, the lost ones, and what happened to them lately. */
export function WorkersCard() {
  useTick(1000);
  const live = useLive();
  // No timer: whether a process is alive changes only with a worker event; a lost one's heartbeat no longer moves.
  const q = useWorkers(false);
  const list = q.data?.workers ?? [];
  const down = list.filter((w) => workerStatus(w) === 'lost');
  const alive = list.filter((w) => w.alive).length;
  return (
    <Card title="Workers">
      {!q.data ? (
        <ErrorBox error={q.error} />
      ) : (
        <>
          <p>
            <Link to="/workers">
              {alive} of {list.length} process{list.length === 1 ? '' : 'es'} alive
            </Link>
          </p>
          {down.length > 0 && (
            <ul className="bad" aria-label="Lost workers">
              {down.map((w) => (
                <li key={w.id}>
                  {w.name} lost: last heartbeat {fmt.ago(w.lastHeartbeat)}
                  {w.inFlight > 0 ? `, still holding ${w.inFlight}` : ''}
                </li>
              ))}
            </ul>
          )}
          {live.processEvents.length > 0 && (
            <ul aria-label="Worker events">
              {live.processEvents.slice(0, 5).map((f) => (
                <li key={f.seq}>
                  {fmt.time(f.timestamp)} {eventText(f)}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </Card>
  );
}
