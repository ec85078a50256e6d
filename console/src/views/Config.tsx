import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type ReloadResult } from '../api';
import { Confirm, ErrorBox, Loading, OpButton } from '../ui';

function Diff({ plan }: { plan: ReloadResult }) {
  const none = plan.added.length + plan.removed.length + plan.updated.length + plan.changed.length === 0;
  if (none) return <p>Nothing would change.</p>;
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
      {plan.updated.map((n) => {
        const fields = plan.updatedFields?.[n] ?? [];
        return (
          <li key={`~${n}`} className="updated">
            ~ updated {n}
            {fields.length > 0 ? `: ${fields.join(', ')}` : ''}
          </li>
        );
      })}
      {plan.changed.map((k) => (
        <li key={`*${k}`} className="updated">
          ~ changed {k}
          {plan.restartRequired.includes(k) ? ' (takes effect after a restart)' : ''}
        </li>
      ))}
    </ul>
  );
}

/** The configuration as organism.yaml is written (rendered by the server, secrets left out), with a copy button. */
function ConfigYaml() {
  const yaml = useQuery({ queryKey: ['config', 'yaml'], queryFn: api.configYaml });
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async (text: string) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied');
    } catch {
      setCopied('Copying was refused by the browser');
    }
  };
  if (yaml.error) return <ErrorBox error={yaml.error} />;
  if (yaml.data === undefined) return <Loading what="configuration" />;
  const text = yaml.data;
  return (
    <section className="card config-yaml" aria-label="organism.yaml (sanitized)">
      <div className="toolbar">
        <h2>organism.yaml (sanitized)</h2>
        <button type="button" onClick={() => void copy(text)}>
          Copy
        </button>
        {copied && (
          <span className="muted" role="status">
            {copied}
          </span>
        )}
        <span className="muted">What the server runs, defaults filled in; environment variables by name, never their values.</span>
      </div>
      <pre className="yaml">{text}</pre>
    </section>
  );
}

/** The sanitized configuration; Reload shows the dry-run diff and applies only on confirm. */
export function ConfigView() {
  const qc = useQueryClient();
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
      <ConfigYaml />
    </div>
  );
}
