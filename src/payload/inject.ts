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
 * Returns the validated payload or throws an error naming every bad field.
 */
export function resolveInjectPayload(body: unknown, accepted: PayloadType, registry: PayloadRegistry, target = '(target)'): { payloadType: string; payload: Record<string, unknown> } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    const errors = [{ path: '', message: 'payload must be a JSON object' }];
    throw Errors.INVALID_PAYLOAD.withData(errors, accepted.name, summarizeFieldErrors(errors));
  }
  const mapping = body as Record<string, unknown>;
  const first = Object.keys(mapping)[0];
  let fields: unknown = mapping;
  if (first !== undefined && registry.has(first) && !accepted.fields.some((f) => f.name === first)) {
    if (first !== accepted.name) throw Errors.WRONG_PAYLOAD_TYPE(target, accepted.name, first);
    if (Object.keys(mapping).length > 1) {
      const errors = Object.keys(mapping)
        .slice(1)
        .map((k) => ({ path: k, message: `unexpected key beside the payload type key ${first}` }));
      throw Errors.INVALID_PAYLOAD.withData(errors, accepted.name, summarizeFieldErrors(errors));
    }
    fields = mapping[first];
  }
  const checked = accepted.validate(fields);
  if (!checked.ok) throw Errors.INVALID_PAYLOAD.withData(checked.errors, accepted.name, summarizeFieldErrors(checked.errors));
  return { payloadType: accepted.name, payload: checked.value };
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
