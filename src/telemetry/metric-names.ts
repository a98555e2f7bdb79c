/** One metric: its OpenTelemetry name and unit, and the name Prometheus shows it by. */
export interface MetricName {
  readonly name: string;
  readonly unit: string;
  readonly description: string;
  /** As OpenTelemetry's Prometheus exporter (0.2xx) names it, and as `prometheusText` writes it. */
  readonly prometheus: string;
}

/**
 * Every metric the telemetry reports and `prometheusText` writes, in one place so that the two
 * agree. Durations are in seconds, as OpenTelemetry's conventions and Prometheus want them.
 */
export const metricNames = {
  sends: {
    name: "renderguard.sends",
    unit: "{send}",
    description: "Sends to the rendering service, by outcome: ok, or the error code.",
    prometheus: "renderguard_sends_total",
  },
  sendDuration: {
    name: "http.client.request.duration",
    unit: "s",
    description: "How long each send took, from the request handed to the transport to its answer: no wait, no queue.",
    prometheus: "http_client_request_duration",
  },
  jobs: {
    name: "renderguard.jobs",
    unit: "{job}",
    description: "Jobs finished, by outcome: ok, or the code the job failed with.",
    prometheus: "renderguard_jobs_total",
  },
  jobDuration: {
    name: "renderguard.job.duration",
    unit: "s",
    description: "How long each job took, from the call to its result, waits and resends included.",
    prometheus: "renderguard_job_duration",
  },
  billed: {
    name: "renderguard.renders.billed",
    unit: "{render}",
    description: "Renders billed: successes and render_failed.",
    prometheus: "renderguard_renders_billed_total",
  },
  maybeBilled: {
    name: "renderguard.renders.maybe_billed",
    unit: "{render}",
    description: "Sends that may have been billed: the request left and no answer came, or the answer reads both ways.",
    prometheus: "renderguard_renders_maybe_billed_total",
  },
  waitTime: {
    name: "renderguard.wait.time",
    unit: "s",
    description: "Time jobs spent waiting, by reason, summed over jobs.",
    prometheus: "renderguard_wait_time_total",
  },
  events: {
    name: "renderguard.events",
    unit: "{event}",
    description: "Resilience events, by Polly's event.name and event.severity.",
    prometheus: "renderguard_events_total",
  },
  breakerState: {
    name: "renderguard.breaker.state",
    unit: "1",
    description: "The circuit breaker: 0 closed, 1 half-open, 2 open.",
    prometheus: "renderguard_breaker_state",
  },
  sendRate: {
    name: "renderguard.send_rate",
    unit: "{send}/s",
    description: "The send rate learned from rate_limited answers; absent while unlimited.",
    prometheus: "renderguard_send_rate",
  },
  remaining: {
    name: "renderguard.renders.remaining",
    unit: "{render}",
    description: "Renders left as the newest X-Renders-Remaining said, minus sends in flight; absent before any.",
    prometheus: "renderguard_renders_remaining",
  },
  inFlight: {
    name: "renderguard.sends.in_flight",
    unit: "{send}",
    description: "Sends on the wire now.",
    prometheus: "renderguard_sends_in_flight",
  },
  waiting: {
    name: "renderguard.jobs.waiting",
    unit: "{job}",
    description: "Jobs waiting now, by reason (concurrency: queued for a send slot).",
    prometheus: "renderguard_jobs_waiting",
  },
  active: {
    name: "renderguard.jobs.active",
    unit: "{job}",
    description: "Jobs begun and not finished.",
    prometheus: "renderguard_jobs_active",
  },
} as const satisfies Record<string, MetricName>;

/** Attribute names, OpenTelemetry's where one means the same. */
export const attributeNames = {
  client: "renderguard.client.name",
  outcome: "renderguard.outcome",
  waitReason: "renderguard.wait.reason",
  eventName: "event.name",
  eventSeverity: "event.severity",
} as const;

/** The breaker's state as the gauge reports it. */
export const breakerStateValues = { closed: 0, half_open: 1, open: 2 } as const;
