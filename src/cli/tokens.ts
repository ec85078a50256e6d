import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { OrganismConfig } from '../config/types.js';

export interface ResolvedToken {
  readonly name: string;
  readonly role: 'operator' | 'viewer' | 'approver';
  readonly token: string;
}

export interface TokenResolution {
  readonly tokens: ResolvedToken[];
  /** Where the generated operator token lives, when one was generated. */
  readonly generatedFile: string | null;
  /** Problems that must stop the server (a configured token env var that is not set). */
  readonly problems: string[];
}

export const TOKEN_FILE = 'operator-token';

/**
 * Tokens come from env only: `auth.tokens[].token_env` and ORGANISM_API_TOKEN. A configured
 * variable that is unset is an error (the original silently disabled auth). With no token
 * at all, a random operator token is created once in the data directory (mode 0600).
 */
export function resolveTokens(config: OrganismConfig, dataDir: string, env = process.env): TokenResolution {
  const tokens: ResolvedToken[] = [];
  const problems: string[] = [];
  for (const t of config.auth.tokens) {
    const value = env[t.tokenEnv];
    if (!value) problems.push(`auth token "${t.name}": environment variable ${t.tokenEnv} is not set`);
    else tokens.push({ name: t.name, role: t.role, token: value });
  }
  const fromEnv = env['ORGANISM_API_TOKEN'];
  if (fromEnv) tokens.push({ name: 'ORGANISM_API_TOKEN', role: 'operator', token: fromEnv });
  if (tokens.length > 0 || problems.length > 0) return { tokens, generatedFile: null, problems };

  const file = path.join(dataDir, TOKEN_FILE);
  let token: string;
  if (existsSync(file)) {
    token = readFileSync(file, 'utf8').trim();
  } else {
    token = randomBytes(32).toString('base64url');
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return { tokens: [{ name: 'generated', role: 'operator', token }], generatedFile: file, problems };
}
