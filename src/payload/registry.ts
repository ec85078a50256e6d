import { BUILTIN_PAYLOADS } from './builtin.js';
import { PayloadType } from './payload-type.js';
import type { FieldType, PayloadTypeDef } from './types.js';

export interface PayloadProblem {
  readonly type: string;
  readonly field: string;
  readonly message: string;
}

/** Every payload type of an organism by name (the built-ins always included). */
export class PayloadRegistry {
  private readonly byName = new Map<string, PayloadTypeDef>();
  private readonly compiled = new Map<string, PayloadType>();

  constructor(defs: readonly PayloadTypeDef[] = []) {
    for (const def of BUILTIN_PAYLOADS) this.byName.set(def.name, def);
    for (const def of defs) this.add(def);
  }

  add(def: PayloadTypeDef): void {
    this.byName.set(def.name, def);
    this.compiled.clear(); // nested references may resolve differently now
  }

  get(name: string): PayloadType | undefined {
    let type = this.compiled.get(name);
    if (!type) {
      const def = this.byName.get(name);
      if (!def) return undefined;
      type = new PayloadType(def, (n) => this.byName.get(n));
      this.compiled.set(name, type);
    }
    return type;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  defs(): PayloadTypeDef[] {
    return [...this.byName.values()];
  }

  /** References to unknown types, and cycles of required references no value could satisfy. */
  problems(): PayloadProblem[] {
    const problems: PayloadProblem[] = [];
    for (const def of this.byName.values()) {
      for (const f of def.fields) {
        const ref = innerRef(f.type);
        if (ref && !this.byName.has(ref)) problems.push({ type: def.name, field: f.name, message: `unknown payload type ${ref}` });
      }
    }
    for (const def of this.byName.values()) {
      const cycle = this.requiredCycle(def.name, [def.name]);
      if (cycle) problems.push({ type: def.name, field: '', message: `required fields form a cycle that no value can satisfy: ${cycle.join(' -> ')}` });
    }
    return problems;
  }

  /** A path back to `start` through required, non-list references (lists may be empty). */
  private requiredCycle(start: string, path: string[]): string[] | null {
    const def = this.byName.get(path[path.length - 1]!);
    if (!def) return null;
    for (const f of def.fields) {
      if (f.optional || f.type.kind !== 'ref') continue;
      const next = f.type.name;
      if (next === start) return [...path, next];
      if (path.includes(next)) continue;
      const found = this.requiredCycle(start, [...path, next]);
      if (found) return found;
    }
    return null;
  }
}

function innerRef(type: FieldType): string | null {
  if (type.kind === 'ref') return type.name;
  if (type.kind === 'list') return innerRef(type.of);
  return null;
}
