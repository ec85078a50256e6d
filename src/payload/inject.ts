import { Errors } from '../errors/catalogue.js';
import type { PayloadType } from './payload-type.js';
import type { PayloadRegistry } from './registry.js';
import type { FieldError } from './types.js';
import { identifierReason, unstorableText } from '../util/storable-text.js';

/** `name: expected string, got integer 5; age: required field missing` */
export function summarizeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.path || '(payload)'}: ${e.message}`).join('; ');
}

/**
 * The inject rule: a JSON mapping whose first key names the payload type
 * (`{"Greeting": {"name": "Dan"}}`), or the bare fields of the one type the target accepts.
 * A target of several types (`payload: [A, B]`) takes the first form only: the key says which.
 * Returns the validated payload or throws an error naming every bad field.
 */
export function resolveInjectPayload(
  body: unknown,
  accepts: PayloadType | readonly PayloadType[],
  registry: PayloadRegistry,
  target = '(target)',
): { payloadType: string; payload: Record<string, unknown> } {
  const types: readonly PayloadType[] = Array.isArray(accepts) ? accepts : [accepts as PayloadType];
  const names = types.map((t) => t.name);
  const accepted = types[0] as PayloadType;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    const errors = [{ path: '', message: 'payload must be a JSON object' }];
    throw Errors.INVALID_PAYLOAD.withData(errors, names.join('|'), summarizeFieldErrors(errors));
  }
  const mapping = body as Record<string, unknown>;
  const first = Object.keys(mapping)[0];
  let fields: unknown = mapping;
  let type: PayloadType | undefined = types.length === 1 ? accepted : undefined;
  // A key naming a type, unless the one accepted type has a field of that name (bare fields).
  if (first !== undefined && registry.has(first) && !(types.length === 1 && accepted.fields.some((f) => f.name === first))) {
    type = types.find((t) => t.name === first);
    if (!type) throw Errors.WRONG_PAYLOAD_TYPE(target, typeList(names), first);
    if (Object.keys(mapping).length > 1) {
      const errors = Object.keys(mapping)
        .slice(1)
        .map((k) => ({ path: k, message: `unexpected key beside the payload type key ${first}` }));
      throw Errors.INVALID_PAYLOAD.withData(errors, type.name, summarizeFieldErrors(errors));
    }
    fields = mapping[first];
  }
  if (!type) throw Errors.PAYLOAD_TYPE_REQUIRED(target, typeList(names), accepted.name);
  const checked = type.validate(fields);
  if (!checked.ok) throw Errors.INVALID_PAYLOAD.withData(checked.errors, type.name, summarizeFieldErrors(checked.errors));
  return { payloadType: type.name, payload: checked.value };
}

/** `Ticket`, `Ticket or Approval`, `Ticket, Approval or Lookup`: the types a listener accepts, for an error text. */
export function typeList(types: readonly string[]): string {
  return types.length <= 1 ? (types[0] ?? '') : `${types.slice(0, -1).join(', ')} or ${types[types.length - 1]}`;
}

/**
 * Refuses (422, naming the field) an inject carrying text no store can keep as given: a NUL or
 * a lone surrogate anywhere in the payload or the metadata (keys too), or a target or thread
 * id with a control character. Checked before anything is journaled, so what is accepted is
 * stored the same way on every store.
 */
export function assertStorableInject(to: string, payload: unknown, threadId: string | undefined, metadata: Readonly<Record<string, string>> | undefined): void {
  const problems: Array<{ location: string; field: string; message: string }> = [];
  const idReason = (field: string, value: string | undefined) => {
    const reason = value === undefined ? null : identifierReason(value);
    if (reason) problems.push({ location: 'body', field, message: reason });
  };
  idReason('to', to);
  idReason('threadId', threadId);
  for (const p of [unstorableText(metadata ?? {}, 'metadata'), unstorableText(payload, 'payload')]) if (p) problems.push({ location: 'body', ...p });
  if (problems.length > 0) throw Errors.INVALID_REQUEST.withData(problems, problems.map((p) => `${p.field} ${p.message}`).join('; '));
}
