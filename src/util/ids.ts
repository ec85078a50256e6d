import { v7 as uuidv7 } from 'uuid';

/** Time-sortable unique id (UUIDv7, monotonic within the process). */
export function newId(): string {
  return uuidv7();
}
