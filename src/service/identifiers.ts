import { Errors } from '../errors/catalogue.js';
import type { FieldProblem } from './validation.js';

/** C0 and C1 control characters (U+0000-U+001F, U+007F-U+009F): no identifier holds one. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * An identifier given in a request (a thread id, ...) holding a control character is refused
 * with 422 naming the field and the first such character: PostgreSQL cannot store a NUL, and
 * none of them is anything a person means in an id (both stores refuse them alike).
 */
export function identifierProblem(location: string, field: string, value: string): FieldProblem | null {
  const at = value.search(CONTROL);
  if (at < 0) return null;
  const code = value.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0');
  return { location, field, message: `contains the control character U+${code} at position ${at}; identifiers are printable text` };
}

/** Throws the 422 when `value` is not a usable identifier. */
export function assertIdentifier(location: string, field: string, value: string): void {
  const problem = identifierProblem(location, field, value);
  if (problem) throw Errors.INVALID_REQUEST.withData([problem], `${problem.field} ${problem.message}`);
}
