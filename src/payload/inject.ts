import { Errors } from '../errors/catalogue.js';
import type { PayloadType } from './payload-type.js';
import type { PayloadRegistry } from './registry.js';
import type { FieldError } from './types.js';

/** `name: expected string, got integer 5; age: required field missing` */
export function summarizeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.path || '(payload)'}: ${e.message}`).join('; ');
}

/**
 * The inject rule: a JSON mapping whose first key names the payload type
 * (`{"Greeting": {"name": "Dan"}}`), or the bare fields of the one type the target accepts.
 * Returns the validated payload or throws an error naming every bad field.
 */
export function resolveInjectPayload(
  body: unknown,
  accepted: PayloadType,
  registry: PayloadRegistry,
  target = '(target)',
): { payloadType: string; payload: Record<string, unknown> } {
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
