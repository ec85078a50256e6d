import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type ReloadResult } from '../api';
import { Confirm, ErrorBox, Json, Loading, OpButton } from '../ui';

function Diff({ plan }: { plan: ReloadResult }) {
  const none = plan.added.length + plan.removed.length + plan.updated.length === 0;
  if (none) return <p>No listener would change.</p>;
  return (
    <ul className="diff" aria-label="Reload diff">
      {plan.added.map((n) => (
        <li key={`+${n}`} className="added">
          + added {n}
        </li>
      ))}
      {plan.removed.map((n) => (
        <li key={`-${n}`} className="removed">
          − removed {n}
        </li>
      ))}
      {plan.updated.map((n) => (
        <li key={`~${n}`} className="updated">
          ~ updated {n}
        </li>
      ))}
    </ul>
  );
}

/** The sanitized configuration; Reload shows the dry-run diff and applies only on confirm. */
export function ConfigView() {
  const qc = useQueryClient();
  const config = useQuery({ queryKey: ['config'], queryFn: api.config });
  const [plan, setPlan] = useState<ReloadResult | null>(null);
  const [applied, setApplied] = useState<ReloadResult | null>(null);
  const dryRun = useMutation({ mutationFn: () => api.reload(true), onSuccess: (r) => (setApplied(null), setPlan(r)) });
  const apply = useMutation({
    mutationFn: () => api.reload(false),
    onSuccess: (r) => {
      setPlan(null);
      setApplied(r);
      void qc.invalidateQueries();
    },
    onError: () => setPlan(null),
  });
  return (
    <div>
      <h1>Configuration</h1>
      <div className="toolbar">
        <OpButton onClick={() => dryRun.mutate()} disabled={dryRun.isPending}>
          Reload
        </OpButton>
        <span className="muted">Reads organism.yaml again; shows what would change before applying it.</span>
      </div>
      <ErrorBox error={dryRun.error ?? apply.error} />
      {applied && (
        <div role="status" className="notice">
          Reloaded. <Diff plan={applied} />
        </div>
      )}
      <Confirm open={plan !== null} title="Apply this reload?" confirmLabel="Apply reload" onConfirm={() => apply.mutate()} onCancel={() => setPlan(null)}>
        {plan && <Diff plan={plan} />}
      </Confirm>
      {config.error ? <ErrorBox error={config.error} /> : config.data ? <Json value={config.data} /> : <Loading what="configuration" />}
    </div>
  );
}
