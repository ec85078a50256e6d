import { useMutation, useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { api } from '../api';
import { capabilityChoices, usePayloadEditor } from '../payload-form';
import { useIsOperator, useReadOnlyReason } from '../session';
import { ErrorBox, OpButton } from '../ui';

/**
 * Inject a message: a form generated from the target's JSON Schema (nested objects and lists
 * included), or raw JSON; optional thread id and metadata; opens the new thread on success.
 */
export function InjectView() {
  const operator = useIsOperator();
  const reason = useReadOnlyReason();
  const navigate = useNavigate();
  const caps = useQuery({ queryKey: ['capabilities'], queryFn: api.capabilities, enabled: operator });
  const [target, setTarget] = useState('');
  const cap = useQuery({ queryKey: ['capability', target], queryFn: () => api.capability(target), enabled: operator && target !== '' });
  const [threadId, setThreadId] = useState('');
  const [orgId, setOrgId] = useState('');
  const [userId, setUserId] = useState('');

  useEffect(() => {
    if (!target && caps.data?.capabilities[0]) setTarget(caps.data.capabilities[0].name);
  }, [caps.data, target]);
  const choices = useMemo(() => capabilityChoices(cap.data), [cap.data]);
  // A target of several payload types (`payload: [A, B]`) offers the type to write.
  const payload = usePayloadEditor(choices);

  const inject = useMutation({
    mutationFn: api.inject,
    onSuccess: (r) => void navigate({ to: '/threads/$threadId', params: { threadId: r.threadId } }),
  });

  if (!operator)
    return (
      <div>
        <h1>Inject</h1>
        <p className="muted">{reason}.</p>
        <OpButton>Inject</OpButton>
      </div>
    );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = payload.build();
    if (body === null) return;
    const metadata: Record<string, string> = {};
    if (orgId.trim()) metadata['orgId'] = orgId.trim();
    if (userId.trim()) metadata['userId'] = userId.trim();
    inject.mutate({ to: target, payload: body, ...(threadId.trim() ? { threadId: threadId.trim() } : {}), ...(Object.keys(metadata).length ? { metadata } : {}) });
  };

  return (
    <div>
      <h1>Inject</h1>
      <ErrorBox error={caps.error ?? cap.error} />
      <form onSubmit={submit} className="inject" aria-label="Inject a message">
        <label>
          Target
          <select value={target} onChange={(e) => setTarget(e.target.value)}>
            {(caps.data?.capabilities ?? []).map((c) => (
              <option key={c.name} value={c.name}>
                {c.name} ({(c.rootTags ?? [c.rootTag]).join(' | ')})
              </option>
            ))}
          </select>
        </label>
        {cap.data && <p className="muted">{cap.data.description}</p>}
        {payload.editor}
        <fieldset>
          <legend>Optional</legend>
          <label>
            Thread id (continue a thread)
            <input value={threadId} onChange={(e) => setThreadId(e.target.value)} />
          </label>
          <label>
            orgId
            <input value={orgId} onChange={(e) => setOrgId(e.target.value)} />
          </label>
          <label>
            userId
            <input value={userId} onChange={(e) => setUserId(e.target.value)} />
          </label>
        </fieldset>
        <ErrorBox error={inject.error} />
        <OpButton type="submit" disabled={!payload.ready || inject.isPending}>
          Inject
        </OpButton>
      </form>
    </div>
  );
}
