import { BUILTIN_PAYLOADS } from './builtin.js';
import { PayloadType } from './payload-type.js';
import type { FieldType, PayloadTypeDef } from './types.js';

/** Element names as the XML side writes them (ASCII subset of XML 1.0 names, no colon). */
const XML_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** Names the XML parser refuses (they would reach Object.prototype). */
const RESERVED_FIELD_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** A problem found in a payload type definition (an unknown type name, a reserved field name...). */
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

  /**
   * What would make a type unusable, for the config loader to report: names that cannot be
   * XML element names, references to unknown types, and cycles of required references that
   * no finite value could satisfy (each cycle reported once, at its first type).
   */
  problems(): PayloadProblem[] {
    const problems: PayloadProblem[] = [];
    for (const def of this.byName.values()) {
      if (!XML_NAME.test(def.name)) problems.push({ type: def.name, field: '', message: `type name ${JSON.stringify(def.name)} is not a valid XML element name` });
      const seen = new Set<string>();
      for (const f of def.fields) {
        if (seen.has(f.name)) problems.push({ type: def.name, field: f.name, message: `field ${f.name} is declared twice` });
        seen.add(f.name);
        if (RESERVED_FIELD_NAMES.has(f.name)) problems.push({ type: def.name, field: f.name, message: `field name ${f.name} is reserved` });
        else if (!XML_NAME.test(f.name)) problems.push({ type: def.name, field: f.name, message: `field name ${JSON.stringify(f.name)} is not a valid XML element name` });
      }
      for (const f of def.fields) {
        const ref = innerRef(f.type);
        if (ref && !this.byName.has(ref)) problems.push({ type: def.name, field: f.name, message: `unknown payload type ${ref}` });
      }
    }
    const reported = new Set<string>();
    for (const def of this.byName.values()) {
      const cycle = this.requiredCycle(def.name, [def.name]);
      if (!cycle) continue;
      const key = [...new Set(cycle)].sort().join(' ');
      if (reported.has(key)) continue;
      reported.add(key);
      problems.push({ type: def.name, field: '', message: `required fields form a cycle that no value can satisfy: ${cycle.join(' -> ')}` });
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
