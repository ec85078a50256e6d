import { describe, expect, it } from 'vitest';
import * as organism from '../../src/index.js';
import * as client from '../../src/client/index.js';

// The names themselves are recorded in etc/*.api.md (npm run api:check); this holds the size.
describe('the public API', () => {
  it('organism exports at most 60 runtime values (types aside)', () => {
    expect(Object.keys(organism).length).toBeLessThanOrEqual(60);
  });

  it('organism/client exports the client, the socket and their errors (runtime values; the wire types are types)', () => {
    expect(Object.keys(client).sort()).toEqual(expect.arrayContaining(['createClient', 'OrganismClient', 'OrganismSocket', 'OrganismApiError']));
    expect(Object.keys(client).length).toBeLessThanOrEqual(15);
  });
});
