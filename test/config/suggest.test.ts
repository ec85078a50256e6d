import { describe, expect, it } from 'vitest';
import { closest, editDistance } from '../../src/config/suggest.js';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and adjacent swaps as one edit each', () => {
    expect(editDistance('max_hops', 'max_hops')).toBe(0);
    expect(editDistance('mx_hops', 'max_hops')).toBe(1);
    expect(editDistance('max_hopss', 'max_hops')).toBe(1);
    expect(editDistance('max_hips', 'max_hops')).toBe(1);
    expect(editDistance('max_hpos', 'max_hops')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('closest', () => {
  it('suggests the nearest plausible candidate', () => {
    expect(closest('peer', ['peers', 'payload', 'prompt'])).toBe('peers');
    expect(closest('Max_Hops', ['max_hops', 'max_queue'])).toBe('max_hops');
  });

  it('suggests nothing when nothing is close', () => {
    expect(closest('colour', ['max_attempts', 'retain_days'])).toBeNull();
    expect(closest('b', ['a'])).toBeNull();
    expect(closest('x', [])).toBeNull();
  });
});
