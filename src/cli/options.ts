import { InvalidArgumentError } from 'commander';

/**
 * Parsers of the numeric command-line options. A number is written as a person writes one:
 * decimal digits (and a fraction where seconds allow it); `Number()` alone would take `abc` as
 * NaN, `-5`, `1e3`, `0x10`, `Infinity` and an empty string (as 0). The message names the
 * expected form; commander adds the option and the value it got.
 */
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const INTEGER = /^(0|[1-9][0-9]*)$/;

export function portOption(value: string): number {
  const n = Number(value);
  if (!INTEGER.test(value) || n > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535 in decimal digits (0: any free port)');
  return n;
}

/** Seconds between `min` and `max`, decimal (`30`, `0.5`). */
export function secondsOption(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!DECIMAL.test(value) || n < min || n > max) throw new InvalidArgumentError(`expected seconds from ${min} to ${max} as a decimal number (e.g. 30 or 0.5)`);
    return n;
  };
}
