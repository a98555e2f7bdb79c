import type { DurationSummary } from "../util/durations.js";
import { describe } from "../util/options.js";
import { attributeNames, breakerStateValues, type MetricName, metricNames } from "./metric-names.js";
import type { MeteredStats } from "./metric-sources.js";
import type { ResilienceEventName, ResilienceEventSeverity } from "./resilience-events.js";

const severities: Record<ResilienceEventName, ResilienceEventSeverity> = {
  OnRetry: "Warning",
  OnCircuitOpened: "Error",
  OnCircuitClosed: "Information",
  OnQuotaExhausted: "Warning",
  OnPause: "Warning",
  OnHalt: "Error",
  OnStoreDegraded: "Warning",
};

/**
 * The client's metrics in Prometheus' text format (0.0.4), from `client.stats()`: the names,
 * units and buckets of the OpenTelemetry metrics as OpenTelemetry's Prometheus exporter writes
 * them, so one dashboard reads either. Serve it from any HTTP server:
 * `res.end(prometheusText(client.stats()))`, with `Content-Type: text/plain; version=0.0.4`.
 */
export function prometheusText(stats: MeteredStats): string {
  if (typeof stats?.sends !== "object" || typeof stats.sendDuration !== "object") {
    throw new TypeError(`Expected prometheusText to get client.stats(), got ${describe(stats)}.`);
  }
  const lines: string[] = [];
  const metric = ({ prometheus, description, unit }: MetricName, type: "counter" | "gauge" | "histogram") => {
    lines.push(`# HELP ${prometheus} ${description}`, `# UNIT ${prometheus} ${unit}`, `# TYPE ${prometheus} ${type}`);
  };
  const sample = (name: string, value: number, labels: Readonly<Record<string, string>> = {}) => {
    const pairs = Object.entries(labels).map(([key, label]) => `${key.replaceAll(".", "_")}="${escape(label)}"`);
    lines.push(`${name}${pairs.length > 0 ? `{${pairs.join(",")}}` : ""} ${formatNumber(value)}`);
  };
  const byLabel = (name: MetricName, type: "counter" | "gauge", label: string, counts: Readonly<Record<string, number | undefined>>) => {
    metric(name, type);
    for (const [key, count] of Object.entries(counts)) if (count !== undefined) sample(name.prometheus, count, { [label]: key });
  };
  const histogram = (name: MetricName, summary: DurationSummary) => {
    metric(name, "histogram");
    for (const { leMs, count } of summary.buckets) {
      sample(`${name.prometheus}_bucket`, count, { le: leMs === Number.POSITIVE_INFINITY ? "+Inf" : formatNumber(leMs / 1000) });
    }
    sample(`${name.prometheus}_sum`, summary.totalMs / 1000);
    sample(`${name.prometheus}_count`, summary.count);
  };

  byLabel(metricNames.sends, "counter", attributeNames.outcome, stats.sends);
  histogram(metricNames.sendDuration, stats.sendDuration);
  byLabel(metricNames.jobs, "counter", attributeNames.outcome, stats.jobs);
  histogram(metricNames.jobDuration, stats.jobDuration);
  metric(metricNames.billed, "counter");
  sample(metricNames.billed.prometheus, stats.billed);
  metric(metricNames.maybeBilled, "counter");
  sample(metricNames.maybeBilled.prometheus, stats.possiblyBilled);
  byLabel(metricNames.waitTime, "counter", attributeNames.waitReason, mapValues(stats.waited, (ms) => ms / 1000));
  metric(metricNames.events, "counter");
  for (const [name, count] of Object.entries(stats.events) as [ResilienceEventName, number][]) {
    sample(metricNames.events.prometheus, count, { [attributeNames.eventName]: name, [attributeNames.eventSeverity]: severities[name] });
  }
  metric(metricNames.breakerState, "gauge");
  sample(metricNames.breakerState.prometheus, breakerStateValues[stats.breaker]);
  if (stats.sendRate !== undefined) {
    metric(metricNames.sendRate, "gauge");
    sample(metricNames.sendRate.prometheus, stats.sendRate);
  }
  if (stats.remaining !== undefined) {
    metric(metricNames.remaining, "gauge");
    sample(metricNames.remaining.prometheus, stats.remaining);
  }
  metric(metricNames.inFlight, "gauge");
  sample(metricNames.inFlight.prometheus, stats.inFlight);
  byLabel(metricNames.waiting, "gauge", attributeNames.waitReason, stats.waiting);
  metric(metricNames.active, "gauge");
  sample(metricNames.active.prometheus, stats.jobsActive);
  return `${lines.join("\n")}\n`;
}

function mapValues(record: Readonly<Record<string, number>>, map: (value: number) => number): Record<string, number> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, map(value)]));
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return Number.isNaN(value) ? "NaN" : String(value);
}

/** A label value in the text format: backslash, double quote and newline escaped. */
function escape(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}
