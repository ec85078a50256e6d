import { pino } from 'pino';
import type { Logger } from '../util/logger.js';

/** One line the organism or a handler logged (`ctx.log`), as pino wrote it. */
export interface LogLine {
  readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  readonly msg: string;
  /** The listener whose handler wrote it (handler lines only). */
  readonly listener?: string;
  readonly threadId?: string;
  readonly messageId?: string;
  /** The data logged with it (`ctx.log.info('counted', {words: 5})`: `words`), and pino's own fields. */
  readonly [field: string]: unknown;
}

const LEVELS: Record<number, LogLine['level']> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** A pino logger (debug and up) that keeps its lines in memory, parsed, for tests to read. */
export function memoryLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'debug', base: null, timestamp: false },
    {
      write(text: string) {
        const raw = JSON.parse(text) as Record<string, unknown> & { level: number; msg?: string };
        lines.push({ ...raw, level: LEVELS[raw.level] ?? 'info', msg: raw.msg ?? '' });
      },
    },
  );
  return { logger, lines };
}
