import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The demo organism shipped with the package (examples/demo/organism.yaml). */
export const DEMO_CONFIG = fileURLToPath(new URL('../../examples/demo/organism.yaml', import.meta.url));

/** CONFIG argument, else ./organism.yaml, else the bundled demo. */
export function resolveConfigPath(arg: string | undefined): { path: string; isDemo: boolean } {
  if (arg) return { path: path.resolve(arg), isDemo: false };
  const local = path.resolve('organism.yaml');
  if (existsSync(local)) return { path: local, isDemo: false };
  return { path: DEMO_CONFIG, isDemo: true };
}

/**
 * --data-dir, else ORGANISM_DATA_DIR, else `.organism/` beside the config file. The bundled
 * demo keeps its data in ./.organism of the working directory (the package may be read-only).
 */
export function resolveDataDir(flag: string | undefined, configPath: string, isDemo: boolean): string {
  if (flag) return path.resolve(flag);
  const env = process.env['ORGANISM_DATA_DIR'];
  if (env) return path.resolve(env);
  return isDemo ? path.resolve('.organism') : path.join(path.dirname(configPath), '.organism');
}
