import type { Attributes, Meter as OtelMeter } from "@opentelemetry/api";
import { DURATION_BUCKETS_MS } from "../util/durations.js";
import type { Disposable } from "../util/events.js";
import { attributeNames, breakerStateValues, type MetricName, metricNames } from "./metric-names.js";
import type { MetricSources, ServerAttributes } from "./metric-sources.js";

const seconds = (ms: number) => ms / 1000;
const describe = ({ description, unit }: MetricName) => ({ description, unit });

/**
 * Reports the client's metrics through an OpenTelemetry meter, from the same events and counts
 * as `stats()`. Dispose to stop: the gauges stop being read and nothing more is counted.
 */
export function recordMetrics(meter: OtelMeter, sources: MetricSources, server: ServerAttributes, client: Attributes): Disposable {
  const durationAdvice = { advice: { explicitBucketBoundaries: DURATION_BUCKETS_MS.map(seconds) } };
  const sends = meter.createCounter(metricNames.sends.name, describe(metricNames.sends));
  const sendDuration = meter.createHistogram(metricNames.sendDuration.name, { ...describe(metricNames.sendDuration), ...durationAdvice });
  const jobs = meter.createCounter(metricNames.jobs.name, describe(metricNames.jobs));
  const jobDuration = meter.createHistogram(metricNames.jobDuration.name, { ...describe(metricNames.jobDuration), ...durationAdvice });
  const billed = meter.createCounter(metricNames.billed.name, describe(metricNames.billed));
  const maybeBilled = meter.createCounter(metricNames.maybeBilled.name, describe(metricNames.maybeBilled));
  const waitTime = meter.createCounter(metricNames.waitTime.name, describe(metricNames.waitTime));
  const events = meter.createCounter(metricNames.events.name, describe(metricNames.events));
  const breakerState = meter.createObservableGauge(metricNames.breakerState.name, describe(metricNames.breakerState));
  const sendRate = meter.createObservableGauge(metricNames.sendRate.name, describe(metricNames.sendRate));
  const remaining = meter.createObservableGauge(metricNames.remaining.name, describe(metricNames.remaining));
  const inFlight = meter.createObservableUpDownCounter(metricNames.inFlight.name, describe(metricNames.inFlight));
  const waiting = meter.createObservableUpDownCounter(metricNames.waiting.name, describe(metricNames.waiting));
  const active = meter.createObservableUpDownCounter(metricNames.active.name, describe(metricNames.active));

  const subscriptions = [
    sources.onSend(({ ms, status, outcome, billed: bill }) => {
      sends.add(1, { ...client, [attributeNames.outcome]: outcome });
      if (bill === true) billed.add(1, client);
      else if (bill === "unknown") maybeBilled.add(1, client);
      const attributes: Attributes = { ...client, "http.request.method": "POST", ...server };
      if (status !== undefined) attributes["http.response.status_code"] = status;
      if (outcome !== "ok") attributes["error.type"] = outcome;
      sendDuration.record(seconds(ms), attributes);
    }),
    sources.onJob(({ outcome, ms }) => {
      jobs.add(1, { ...client, [attributeNames.outcome]: outcome });
      jobDuration.record(seconds(ms), client);
    }),
    sources.onWait(({ reason, ms }) => waitTime.add(seconds(ms), { ...client, [attributeNames.waitReason]: reason })),
    sources.onResilienceEvent(({ name, severity }) =>
      events.add(1, { ...client, [attributeNames.eventName]: name, [attributeNames.eventSeverity]: severity }),
    ),
  ];

  const gauges = [breakerState, sendRate, remaining, inFlight, waiting, active];
  const observe = (result: Parameters<Parameters<OtelMeter["addBatchObservableCallback"]>[0]>[0]) => {
    const stats = sources.stats();
    result.observe(breakerState, breakerStateValues[stats.breaker], client);
    if (stats.sendRate !== undefined) result.observe(sendRate, stats.sendRate, client);
    if (stats.remaining !== undefined) result.observe(remaining, stats.remaining, client);
    result.observe(inFlight, stats.inFlight, client);
    for (const [reason, count] of Object.entries(stats.waiting)) {
      result.observe(waiting, count, { ...client, [attributeNames.waitReason]: reason });
    }
    result.observe(active, stats.jobsActive, client);
  };
  meter.addBatchObservableCallback(observe, gauges);
  return {
    dispose() {
      for (const subscription of subscriptions) subscription.dispose();
      meter.removeBatchObservableCallback(observe, gauges);
    },
  };
}
