/**
 * organism_http_request_duration_seconds, counted per request in plain numbers and shaped as
 * a prom-client histogram only when scraped. prom-client's Histogram validates, converts and
 * hashes the labels of every observation, even through a bound child: for a cheap route that
 * was a tenth of the request's CPU (bench/tools/wrk-http.ts). Registered on a prom-client
 * Registry as a custom metric (its `get()` contract), so the text format is prom-client's own.
 */

export const HTTP_DURATION_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Labels = { readonly method: string; readonly route: string; readonly status_code: string };

/** One (method, route, status) series: a count per bucket (not cumulative), the sum and the count. */
export class DurationSeries {
  readonly counts = new Float64Array(HTTP_DURATION_BUCKETS.length);
  sum = 0;
  count = 0;

  constructor(readonly labels: Labels) {}

  observe(seconds: number): void {
    let i = 0;
    while (i < HTTP_DURATION_BUCKETS.length && seconds > HTTP_DURATION_BUCKETS[i]!) i++;
    if (i < HTTP_DURATION_BUCKETS.length) this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

interface Value {
  readonly labels: Record<string, string | number>;
  readonly sharedLabels?: Labels;
  readonly value: number;
  readonly metricName: string;
}

export class HttpDurations {
  readonly name = 'organism_http_request_duration_seconds';
  readonly help = 'Control API request durations, by method, route pattern (never the raw URL) and status code.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all: DurationSeries[] = [];

  /** A new series (the caller keeps it: labels are bounded by the route table). */
  series(method: string, route: string, status: number): DurationSeries {
    const s = new DurationSeries({ method, route, status_code: String(status) });
    this.all.push(s);
    return s;
  }

  /** What prom-client's Histogram gives its registry for the text format: the series' labels shared, `le` per bucket. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all) {
      let acc = 0;
      HTTP_DURATION_BUCKETS.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: bucket });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The JSON form (Registry#getMetricsAsJSON): every label on the value. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const data = await this.getForPromString();
    return { ...data, values: data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    for (const s of this.all) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
