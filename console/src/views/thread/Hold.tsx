import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type ThreadInfo } from '../../api';
import { ErrorBox, fmt, Json, OpButton } from '../../ui';

const RULES: Record<string, string> = {
  operator: 'an operator',
  repeat: 'the loop breaker (the same message on one edge, again and again)',
  cycle: 'the loop breaker (a cycle of agents repeating itself)',
  velocity: 'the loop breaker (tokens per minute)',
};

/**
 * A thread's hold (issue 30): held, why and by whom, with Resume (and Resume with raised
 * limits); an unfinished thread that is not held has Hold (with an optional reason).
 */
export function HoldPanel({ thread }: { thread: ThreadInfo }) {
  const qc = useQueryClient();
  const [reason, setReason] = useState('');
  const refresh = () => Promise.all([qc.invalidateQueries({ queryKey: ['thread', thread.id] }), qc.invalidateQueries({ queryKey: ['thread-journal', thread.id] })]);
  const pause = useMutation({ mutationFn: () => api.pauseThread(thread.id, reason), onSuccess: refresh });
  const resume = useMutation({ mutationFn: (raise: boolean) => api.resumeThread(thread.id, raise), onSuccess: refresh });
  const hold = thread.hold ?? null;

  if (thread.status === 'held' && hold) {
    return (
      <>
        <p className="hold-reason" role="status" aria-label="Held because">
          Held: {hold.reason}
        </p>
        <dl>
          <dt>By</dt>
          <dd>
            {hold.by} ({RULES[hold.rule] ?? hold.rule})
          </dd>
          <dt>Since</dt>
          <dd>{fmt.dateTime(hold.heldAt)}</dd>
          {hold.limitFactor > 1 && (
            <>
              <dt>Limits</dt>
              <dd>raised ×{hold.limitFactor}</dd>
            </>
          )}
        </dl>
        {hold.evidence !== null && hold.evidence !== undefined && (
          <details>
            <summary>Evidence</summary>
            <Json value={hold.evidence} />
          </details>
        )}
        <p className="muted">Its deliveries wait (PENDING) until it is resumed; nothing more is spent.</p>
        <div className="hold-actions">
          <OpButton onClick={() => resume.mutate(false)} disabled={resume.isPending}>
            Resume
          </OpButton>
          {hold.rule !== 'operator' && (
            <OpButton onClick={() => resume.mutate(true)} disabled={resume.isPending}>
              Resume with raised limits
            </OpButton>
          )}
        </div>
        <ErrorBox error={resume.error} />
      </>
    );
  }
  const holdable = thread.status === 'active' || thread.status === 'waiting';
  return (
    <>
      {hold && !hold.held && (
        <p className="muted">
          Held earlier ({hold.reason}); resumed by {hold.resumedBy} at {fmt.dateTime(hold.resumedAt)}
          {hold.limitFactor > 1 ? `, loop limits raised ×${hold.limitFactor}` : ''}.
        </p>
      )}
      {holdable ? (
        <div className="hold-actions">
          <input aria-label="Reason" placeholder="Reason (optional)" value={reason} maxLength={1000} onChange={(e) => setReason(e.target.value)} />
          <OpButton onClick={() => pause.mutate()} disabled={pause.isPending}>
            Hold thread
          </OpButton>
        </div>
      ) : (
        !hold && <p className="muted">Not held ({thread.status}).</p>
      )}
      <ErrorBox error={pause.error} />
    </>
  );
}
