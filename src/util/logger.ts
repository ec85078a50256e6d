import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Structured JSON logs to stderr; secrets never reach here (config holds env var names only). */
export function createLogger(level: LogLevel = 'info', name = 'organism'): Logger {
  return pino({ name, level }, pino.destination(2));
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
