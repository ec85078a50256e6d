import { useMutation, useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, type JsonSchema } from '../api';
import { useIsOperator, VIEWER_REASON } from '../session';
import { ErrorBox, Loading, OpButton } from '../ui';

type Value = unknown;

/** Follows `$ref: #/$defs/Name` into the root schema's definitions. */
function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  if (schema.$ref) {
    const name = schema.$ref.replace(/^#\/\$defs\//, '');
    return root.$defs?.[name] ?? {};
  }
  return schema;
}

function typeOf(schema: JsonSchema): string {
  const t = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type;
  return t ?? (schema.properties ? 'object' : 'string');
}

/** The starting value of a field: empty but well-typed (lists empty, objects with their required fields). */
function initial(schema: JsonSchema, root: JsonSchema): Value {
  const s = resolve(schema, root);
  switch (typeOf(s)) {
    case 'object': {
      const out: Record<string, Value> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) if (s.required?.includes(k)) out[k] = initial(v, root);
      return out;
    }
    case 'array':
      return [];
    case 'boolean':
      return false;
    case 'integer':
    case 'number':
      return '';
    default:
      return '';
  }
}

/** Numbers are edited as text; turned into numbers (or left out when empty) on submit. */
function finalize(schema: JsonSchema, root: JsonSchema, value: Value): Value {
  const s = resolve(schema, root);
  const t = typeOf(s);
  if (t === 'object') {
    const out: Record<string, Value> = {};
    for (const [k, v] of Object.entries((value ?? {}) as Record<string, Value>)) {
      const fs = s.properties?.[k];
      const f = fs ? finalize(fs, root, v) : v;
      if (f !== undefined) out[k] = f;
    }
    return out;
  }
  if (t === 'array') return ((value ?? []) as Value[]).map((v) => finalize(s.items ?? {}, root, v));
  if (t === 'integer' || t === 'number') return value === '' ? undefined : Number(value);
  return value;
}

function Field({
  name,
  schema,
  root,
  value,
  onChange,
  required,
  path,
}: {
  name: string;
  schema: JsonSchema;
  root: JsonSchema;
  value: Value;
  onChange: (v: Value) => void;
  required: boolean;
  path: string;
}) {
  const id = useId();
  const s = resolve(schema, root);
  const t = typeOf(s);
  const label = (
    <span>
      {name}
      {required && (
        // biome-ignore lint/a11y/useAriaPropsSupportedByRole: a real finding, left for a console change: browsers read it into the field's name, but a <span> has no role that takes a label (role="img" would)
        <span className="required" aria-label="required">
          {' '}
          *
        </span>
      )}{' '}
      <span className="muted">({s.title ?? t})</span>
    </span>
  );
  if (t === 'object') {
    const obj = (value ?? {}) as Record<string, Value>;
    return (
      <fieldset>
        <legend>{label}</legend>
        {s.description && <p className="muted">{s.description}</p>}
        {Object.entries(s.properties ?? {}).map(([k, fs]) => (
          <Field key={k} name={k} path={`${path}.${k}`} schema={fs} root={root} value={obj[k]} required={s.required?.includes(k) ?? false} onChange={(v) => onChange({ ...obj, [k]: v })} />
        ))}
      </fieldset>
    );
  }
  if (t === 'array') {
    const list = (value ?? []) as Value[];
    const item = s.items ?? {};
    return (
      <fieldset>
        <legend>{label}</legend>
        {list.map((v, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: list items are bare values with no identity; the position is what the field edits
          <div key={i} className="list-item">
            <Field name={`${name}[${i}]`} path={`${path}[${i}]`} schema={item} root={root} value={v} required={false} onChange={(nv) => onChange(list.map((x, j) => (j === i ? nv : x)))} />
            <button type="button" aria-label={`Remove ${name} item ${i + 1}`} onClick={() => onChange(list.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => onChange([...list, initial(item, root)])}>
          Add {name} item
        </button>
      </fieldset>
    );
  }
  if (t === 'boolean') {
    return (
      <label className="check" htmlFor={id}>
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} /> {label}
      </label>
    );
  }
  return (
    <label htmlFor={id}>
      {label}
      {s.description && <span className="muted"> — {s.description}</span>}
      <input
        id={id}
        name={path}
        type={t === 'integer' || t === 'number' ? 'number' : 'text'}
        step={t === 'integer' ? 1 : 'any'}
        value={String(value ?? '')}
        required={required}
        onChange={(e) => onChange(e.target.value)}
      />
    </label>
  );
}

/**
 * Inject a message: a form generated from the target's JSON Schema (nested objects and lists
 * included), or raw JSON; optional thread id and metadata; opens the new thread on success.
 */
export function InjectView() {
  const operator = useIsOperator();
  const navigate = useNavigate();
  const caps = useQuery({ queryKey: ['capabilities'], queryFn: api.capabilities, enabled: operator });
  const [target, setTarget] = useState('');
  const cap = useQuery({ queryKey: ['capability', target], queryFn: () => api.capability(target), enabled: operator && target !== '' });
  const [value, setValue] = useState<Value>({});
  const [raw, setRaw] = useState(false);
  const [rawText, setRawText] = useState('{}');
  const [rawError, setRawError] = useState<string | null>(null);
  const [threadId, setThreadId] = useState('');
  const [orgId, setOrgId] = useState('');
  const [userId, setUserId] = useState('');
  // A target of several payload types (`payload: [A, B]`): the one the operator chose ('' = the first).
  const [typeName, setTypeName] = useState('');

  useEffect(() => {
    if (!target && caps.data?.capabilities[0]) setTarget(caps.data.capabilities[0].name);
  }, [caps.data, target]);
  const types = cap.data?.payloadTypes;
  const chosen = types?.find((t) => t.name === typeName) ?? types?.[0];
  const schema = chosen ? (chosen.jsonSchema as JsonSchema) : cap.data?.jsonSchema;
  const rootTag = chosen?.name ?? cap.data?.rootTag ?? '';
  useEffect(() => {
    if (!schema) return;
    const v = initial(schema, schema);
    setValue(v);
    setRawText(JSON.stringify({ [rootTag]: v }, null, 2));
  }, [schema, rootTag]);

  const inject = useMutation({
    mutationFn: api.inject,
    onSuccess: (r) => void navigate({ to: '/threads/$threadId', params: { threadId: r.threadId } }),
  });

  if (!operator)
    return (
      <div>
        <h1>Inject</h1>
        <p className="muted">{VIEWER_REASON}.</p>
        <OpButton>Inject</OpButton>
      </div>
    );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!schema || !cap.data) return;
    let payload: unknown;
    if (raw) {
      try {
        payload = JSON.parse(rawText);
        setRawError(null);
      } catch (err) {
        setRawError(`Not valid JSON: ${(err as Error).message}`);
        return;
      }
    } else {
      payload = { [rootTag]: finalize(schema, schema, value) };
    }
    const metadata: Record<string, string> = {};
    if (orgId.trim()) metadata['orgId'] = orgId.trim();
    if (userId.trim()) metadata['userId'] = userId.trim();
    inject.mutate({ to: target, payload, ...(threadId.trim() ? { threadId: threadId.trim() } : {}), ...(Object.keys(metadata).length ? { metadata } : {}) });
  };

  return (
    <div>
      <h1>Inject</h1>
      <ErrorBox error={caps.error ?? cap.error} />
      <form onSubmit={submit} className="inject" aria-label="Inject a message">
        <label>
          Target
          <select
            value={target}
            onChange={(e) => {
              setTarget(e.target.value);
              setTypeName('');
            }}
          >
            {(caps.data?.capabilities ?? []).map((c) => (
              <option key={c.name} value={c.name}>
                {c.name} ({(c.rootTags ?? [c.rootTag]).join(' | ')})
              </option>
            ))}
          </select>
        </label>
        {cap.data && <p className="muted">{cap.data.description}</p>}
        {types && (
          <label>
            Payload type
            <select value={chosen?.name ?? ''} onChange={(e) => setTypeName(e.target.value)}>
              {types.map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="check">
          <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> Raw JSON
        </label>
        {!schema ? (
          <Loading what="schema" />
        ) : raw ? (
          <label>
            Payload (JSON: the first key names the payload type)
            <textarea rows={10} value={rawText} onChange={(e) => setRawText(e.target.value)} spellCheck={false} />
          </label>
        ) : (
          <Field key={rootTag} name={rootTag} path={rootTag} schema={schema} root={schema} value={value} required onChange={setValue} />
        )}
        {rawError && (
          <p className="error" role="alert">
            {rawError}
          </p>
        )}
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
        <OpButton type="submit" disabled={!schema || inject.isPending}>
          Inject
        </OpButton>
      </form>
    </div>
  );
}
