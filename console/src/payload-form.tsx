// The payload editor the inject and inbox answer forms share: a form generated from a payload
// type's JSON Schema (nested objects and lists, required marks), a type select for a target of
// several types, or raw JSON.
import { useEffect, useId, useState, type ReactNode } from 'react';
import type { JsonSchema } from './api';
import { Loading } from './ui';

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

/** A payload type a form may write: its name (the payload's root key) and its JSON Schema. */
export interface PayloadChoice {
  readonly name: string;
  readonly schema: JsonSchema;
}

/** The types a capability accepts (GET /capabilities/{name}): several, or its one. */
export function capabilityChoices(
  cap: { rootTag?: string; jsonSchema?: JsonSchema; payloadTypes?: ReadonlyArray<{ name: string; jsonSchema: unknown }> } | undefined,
): PayloadChoice[] | undefined {
  if (!cap) return undefined;
  if (cap.payloadTypes) return cap.payloadTypes.map((t) => ({ name: t.name, schema: t.jsonSchema as JsonSchema }));
  return cap.jsonSchema && cap.rootTag ? [{ name: cap.rootTag, schema: cap.jsonSchema }] : [];
}

/**
 * The types an inbox item's `answerSchema` allows: one type's schema (its title names it), or
 * `oneOf` objects keyed by type name. An asker with no payload type (the outside world) has none:
 * raw JSON only.
 */
export function answerChoices(schema: JsonSchema & { oneOf?: JsonSchema[] }): PayloadChoice[] {
  if (schema.oneOf) return schema.oneOf.flatMap((o) => Object.entries(o.properties ?? {}).map(([name, s]) => ({ name, schema: s })));
  return schema.title && schema.properties ? [{ name: schema.title, schema }] : [];
}

/**
 * The state of a payload editor over `choices` (memoize them: a new list resets the form):
 * `editor` is its fields, `build()` the payload to send (`{Type: {...}}`), or null after
 * saying why (raw JSON that does not parse). With no choices it is raw JSON only.
 */
export function usePayloadEditor(choices: readonly PayloadChoice[] | undefined): { editor: ReactNode; build: () => unknown | null; ready: boolean } {
  const [typeName, setTypeName] = useState('');
  const [value, setValue] = useState<Value>({});
  const [raw, setRaw] = useState(false);
  const [rawText, setRawText] = useState('{}');
  const [rawError, setRawError] = useState<string | null>(null);
  const chosen = choices?.find((c) => c.name === typeName) ?? choices?.[0];
  const rawOnly = choices !== undefined && choices.length === 0;
  useEffect(() => {
    if (!chosen) return;
    const v = initial(chosen.schema, chosen.schema);
    setValue(v);
    setRawText(JSON.stringify({ [chosen.name]: v }, null, 2));
  }, [chosen]);

  const build = (): unknown | null => {
    if (raw || rawOnly) {
      try {
        const parsed: unknown = JSON.parse(rawText);
        setRawError(null);
        return parsed;
      } catch (err) {
        setRawError(`Not valid JSON: ${(err as Error).message}`);
        return null;
      }
    }
    return chosen ? { [chosen.name]: finalize(chosen.schema, chosen.schema, value) } : null;
  };

  const editor = (
    <>
      {choices && choices.length > 1 && (
        <label>
          Payload type
          <select value={chosen?.name ?? ''} onChange={(e) => setTypeName(e.target.value)}>
            {choices.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {!rawOnly && (
        <label className="check">
          <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> Raw JSON
        </label>
      )}
      {!choices ? (
        <Loading what="schema" />
      ) : raw || rawOnly ? (
        <label>
          Payload (JSON: the first key names the payload type)
          <textarea rows={10} value={rawText} onChange={(e) => setRawText(e.target.value)} spellCheck={false} />
        </label>
      ) : (
        chosen && <Field key={chosen.name} name={chosen.name} path={chosen.name} schema={chosen.schema} root={chosen.schema} value={value} required onChange={setValue} />
      )}
      {rawError && (
        <p className="error" role="alert">
          {rawError}
        </p>
      )}
    </>
  );
  return { editor, build, ready: choices !== undefined && (rawOnly || chosen !== undefined) };
}

/** What a value editor's `build()` gives: the value to send, or null after saying why not (JSON that does not parse). */
export type Built = { readonly value: unknown } | null;

/**
 * An editor of one value prefilled with `start` (a tool call's arguments as the model proposed
 * them): the form generated from `schema` when it describes an object's fields, with **Raw JSON**
 * to edit the text instead; JSON text only when there is no such schema.
 */
export function useValueEditor(schema: JsonSchema | undefined, start: unknown, name: string): { editor: ReactNode; build: () => Built } {
  const root = schema ?? {};
  const formable = schema !== undefined && typeOf(resolve(schema, root)) === 'object' && resolve(schema, root).properties !== undefined;
  const [value, setValue] = useState<Value>(start);
  const [raw, setRaw] = useState(!formable);
  const [rawText, setRawText] = useState(() => JSON.stringify(start, null, 2));
  const [rawError, setRawError] = useState<string | null>(null);

  const parse = (): Built => {
    try {
      const parsed: unknown = JSON.parse(rawText);
      setRawError(null);
      return { value: parsed };
    } catch (err) {
      setRawError(`Not valid JSON: ${(err as Error).message}`);
      return null;
    }
  };
  const build = (): Built => (raw ? parse() : { value: finalize(root, root, value) });
  // Switching keeps what was typed: the form's value becomes the text, the text (if it parses) the form's value.
  const switchRaw = (on: boolean) => {
    if (on) {
      setRawText(JSON.stringify(finalize(root, root, value), null, 2));
      setRaw(true);
      return;
    }
    const parsed = parse();
    if (parsed === null) return;
    setValue(parsed.value);
    setRaw(false);
  };

  const editor = (
    <>
      {formable && (
        <label className="check">
          <input type="checkbox" checked={raw} onChange={(e) => switchRaw(e.target.checked)} /> Raw JSON
        </label>
      )}
      {raw ? (
        <label>
          {name} (JSON)
          <textarea rows={Math.min(12, Math.max(3, rawText.split('\n').length))} value={rawText} onChange={(e) => setRawText(e.target.value)} spellCheck={false} />
        </label>
      ) : (
        <Field name={name} path={name} schema={root} root={root} value={value} required onChange={setValue} />
      )}
      {rawError && (
        <p className="error" role="alert">
          {rawError}
        </p>
      )}
    </>
  );
  return { editor, build };
}
