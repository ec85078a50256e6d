import autocannon from 'autocannon';

export interface LoadResult {
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly errors: number;
  readonly non2xx: number;
}

/** One bounded autocannon run (fixed duration) against a loopback URL. */
export async function load(url: string, options: { connections: number; durationSec: number; headers?: Record<string, string> }): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.durationSec,
    timeout: 10,
    ...(options.headers ? { headers: options.headers } : {}),
  });
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result['2xx'] + result.non2xx,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}
