import { isMap, isPair, isScalar, isSeq, Scalar, type Node } from 'yaml';
import { looksLikeSecret } from './document.js';
import { ConfigMessages } from './messages.js';
import { joinPath, type ProblemSink } from './reader.js';

/**
 * `${VAR}` and `${VAR:-default}` in organism.yaml string values, expanded in the parsed
 * document before anything validates it (so the expanded value is what is checked and run).
 * `$${` is a literal `${`. Only values are expanded, never keys. An unquoted value that is one
 * substitution and nothing else takes the type its text has in YAML (`max_hops: ${HOPS:-8}`
 * is the integer 8); a quoted one stays a string.
 */

/** `$${`, or `${` then a variable name and an optional `:-default`, up to the first `}`. */
const TOKEN = /\$\$\{|\$\{([^}]*)\}?/g;
const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;
/**
 * Words (between `_`) of variable names that announce a secret: OPENAI_API_KEY, GITHUB_TOKEN,
 * DB_PASSWORD, ... but not MAX_TOKENS or THREAD_TOKENS, which are numbers.
 */
const SECRET_WORDS = new Set(['KEY', 'APIKEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASSPHRASE', 'CREDENTIAL', 'CREDENTIALS', 'PRIVATE']);
const secretName = (name: string): boolean =>
  name
    .toUpperCase()
    .split('_')
    .some((word) => SECRET_WORDS.has(word));
/** A value that looks like a key: one long random-looking word (not a URL, a path or a sentence). */
const secretValue = (value: string): boolean => !/[\s/:]/.test(value) && looksLikeSecret(value);
/** Keys whose value names a variable that holds a secret. */
const SECRET_NAMING_KEYS = new Set(['api_key_env', 'token_env']);
/** Always a secret: the operator token `serve` reads. */
const ALWAYS_SECRET = ['ORGANISM_API_TOKEN'];

/** What the expansion used: the variables whose values are secrets, to be kept out of every view. */
export interface Substitutions {
  /** Names of the substituted variables that hold secrets (see isSecretVariable). */
  readonly secretVariables: readonly string[];
  /** Their values as substituted (non-empty), to be redacted from problem texts. */
  readonly secretValues: readonly string[];
}

/**
 * Expands every string value of the tree in place, reporting unset variables without a
 * default and malformed references at their value. Returns the secrets it substituted.
 */
export function expandEnvironment(sink: ProblemSink, root: Node | null, env: NodeJS.ProcessEnv): Substitutions {
  const secretNamed = new Set([...ALWAYS_SECRET, ...namesOfSecretVariables(root, env)]);
  const secretVariables = new Set<string>();
  const secretValues = new Set<string>();
  const visit = (node: Node | null, keyPath: string): void => {
    if (node === null) return;
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : '';
        visit((pair.value as Node | null) ?? null, joinPath(keyPath, key));
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        visit(isPair(item) ? null : (item as Node), `${keyPath}[${i}]`);
      });
    } else if (isScalar(node) && typeof node.value === 'string') {
      const expanded = expandString(node.value, env);
      if ('problem' in expanded) {
        sink.add(node, keyPath, expanded.problem);
        return;
      }
      if (expanded.variables.length === 0 && !expanded.escaped) return;
      for (const name of expanded.variables) {
        const value = env[name] ?? '';
        if (!secretNamed.has(name) && !secretName(name) && !secretValue(value)) continue;
        secretVariables.add(name);
        if (value !== '') secretValues.add(value);
      }
      node.value = expanded.whole && node.type === Scalar.PLAIN ? typed(expanded.text) : expanded.text;
    }
  };
  visit(root, '');
  return { secretVariables: [...secretVariables].sort(), secretValues: [...secretValues] };
}

type Expanded = { text: string; variables: string[]; escaped: boolean; whole: boolean } | { problem: string };

/** One string's expansion, or the problem with its first bad reference. */
export function expandString(text: string, env: NodeJS.ProcessEnv): Expanded {
  const variables: string[] = [];
  let escaped = false;
  let problem: string | null = null;
  const out = text.replace(TOKEN, (token: string, inner: string | undefined) => {
    if (token === '$${') {
      escaped = true;
      return '${';
    }
    if (problem !== null) return token;
    if (!token.endsWith('}')) {
      problem = ConfigMessages.envUnclosed(token);
      return token;
    }
    const ref = REFERENCE.exec(inner ?? '');
    if (!ref) {
      problem = ConfigMessages.envMalformed(token);
      return token;
    }
    const [, name = '', fallback] = ref;
    variables.push(name);
    const value = env[name];
    // As in the shell: `:-` takes the default when the variable is unset or empty.
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
    if (value !== undefined) return value;
    problem = ConfigMessages.envUnsetNoDefault(name);
    return token;
  });
  if (problem !== null) return { problem };
  const whole = variables.length === 1 && !escaped && /^\$\{[^}]*\}$/.test(text);
  return { text: out, variables, escaped, whole };
}

/** An unquoted value that was one substitution: what its text means in YAML (a number, true/false), else the text. */
function typed(text: string): string | number | boolean {
  if (/^[-+]?(0|[1-9][0-9]*)$/.test(text)) return Number(text);
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** The variables the document names as holding secrets (`api_key_env`, `token_env`), as written or substituted. */
function namesOfSecretVariables(root: Node | null, env: NodeJS.ProcessEnv): string[] {
  const names: string[] = [];
  const visit = (node: Node | null): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const value = (pair.value as Node | null) ?? null;
        if (isScalar(pair.key) && SECRET_NAMING_KEYS.has(String(pair.key.value)) && isScalar(value) && typeof value.value === 'string') {
          const expanded = expandString(value.value, env);
          names.push('text' in expanded ? expanded.text : value.value);
        } else visit(value);
      }
    } else if (isSeq(node)) for (const item of node.items) visit(item as Node);
  };
  visit(root);
  return names;
}

/** Replaces each secret value in a text (a problem message) with `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return secrets.reduce((s, secret) => s.split(secret).join('[redacted]'), text);
}
