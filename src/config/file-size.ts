import { open } from 'node:fs/promises';
import { ConfigMessages } from './messages.js';

/** An organism.yaml is a few KB; this much is plenty, and parsing it stays cheap. */
export const DEFAULT_MAX_CONFIG_BYTES = 1024 * 1024;
export const MAX_CONFIG_BYTES_ENV = 'ORGANISM_MAX_CONFIG_BYTES';

/** The largest config file to read: ORGANISM_MAX_CONFIG_BYTES if set (decimal bytes), else 1 MiB. */
export function maxConfigBytes(env: NodeJS.ProcessEnv = process.env): number | { error: string } {
  const value = env[MAX_CONFIG_BYTES_ENV];
  if (value === undefined || value === '') return DEFAULT_MAX_CONFIG_BYTES;
  const n = Number(value);
  if (!/^[1-9][0-9]*$/.test(value) || !Number.isSafeInteger(n)) return { error: ConfigMessages.badMaxConfigBytes(MAX_CONFIG_BYTES_ENV, value) };
  return n;
}

/**
 * The file's text, or why it was not read: larger than `max` bytes (checked before reading,
 * and while reading, for files whose size the system does not know, like a pipe or /dev/zero).
 */
export async function readConfigText(file: string, max: number): Promise<{ text: string } | { error: string }> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size > max) return { error: ConfigMessages.fileTooLarge(size, max, MAX_CONFIG_BYTES_ENV) };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(64 * 1024), 0, 64 * 1024, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > max) return { error: ConfigMessages.fileTooLarge(null, max, MAX_CONFIG_BYTES_ENV) };
      chunks.push(buffer.subarray(0, bytesRead));
    }
    return { text: Buffer.concat(chunks).toString('utf8') };
  } finally {
    await handle.close();
  }
}
