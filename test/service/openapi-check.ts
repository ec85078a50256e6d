import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }>>;
}

/** Checks response bodies against the service's own OpenAPI document (what clients rely on). */
export class ResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly cache = new Map<string, ValidateFunction>();
  /** Every documented (method, path template). */
  readonly routes: { method: string; template: string; regex: RegExp }[] = [];
  /** Every (method template status) checked, to prove coverage. */
  readonly checked = new Set<string>();

  constructor(private readonly doc: OpenApiDoc) {
    this.ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    for (const [template, methods] of Object.entries(doc.paths)) {
      const regex = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
      for (const method of Object.keys(methods)) this.routes.push({ method: method.toUpperCase(), template, regex });
    }
  }

  /** The documented route for a concrete request, or null when it is not in the document. */
  route(method: string, path: string): string | null {
    const p = path.split('?')[0]!;
    // Literal segments win over parameters (/journal/stats before /journal/{messageId}).
    const matches = this.routes.filter((r) => r.method === method && r.regex.test(p));
    matches.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
    return matches[0]?.template ?? null;
  }

  /** Throws when `body` does not match the documented schema of that status. */
  check(method: string, path: string, status: number, body: unknown): void {
    const template = this.route(method, path);
    if (!template) return; // unknown routes answer 404 with the generic error body (checked by tests)
    const responses = this.doc.paths[template]![method.toLowerCase()]!.responses ?? {};
    const key = String(status) in responses ? String(status) : `${String(status)[0]}XX` in responses ? `${String(status)[0]}XX` : null;
    if (!key) throw new Error(`${method} ${template}: status ${status} is not documented`);
    const schema = responses[key]!.content?.['application/json']?.schema;
    if (!schema) throw new Error(`${method} ${template} ${key}: no JSON schema`);
    const id = `${method} ${template} ${key}`;
    let validate = this.cache.get(id);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.cache.set(id, validate);
    }
    if (!validate(body)) {
      throw new Error(`${id}: response does not match the OpenAPI schema: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`);
    }
    this.checked.add(`${method} ${template} ${status}`);
  }
}
