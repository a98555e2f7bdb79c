import { AsyncLocalStorage } from "node:async_hooks";
import type * as Api from "@opentelemetry/api";
import { isRenderError } from "../core/errors.js";
import type { Outcome } from "../core/outcomes.js";
import type { SendSpan, Tracing } from "../core/tracing.js";
import type { AttemptContext } from "../core/types.js";
import type { ServerAttributes } from "./metric-sources.js";

/** Span attributes and events of the job in progress. */
export interface SpanTracing extends Tracing {
  /** Adds an event to the span of the job in whose course it happened, if one is in progress. */
  event(name: string, attributes: Api.Attributes): void;
}

/**
 * Traces each job as a `render` span and each send as a child `POST` span, after OpenTelemetry's
 * HTTP client conventions. The job's span is found again through the job's own async context, so
 * a send or an event finds its job's span whether or not the application registered a context
 * manager; the job's span is also made active for whatever runs inside it (a policy of yours, an
 * SDK instrumented on its own).
 */
export function spanTracing(
  api: typeof Api,
  tracer: Api.Tracer,
  url: string,
  server: ServerAttributes,
  propagate: boolean,
  client: Api.Attributes,
): SpanTracing {
  const jobs = new AsyncLocalStorage<{ readonly span: Api.Span; readonly context: Api.Context }>();
  return {
    job(jobId, run) {
      const span = tracer.startSpan("render", { kind: api.SpanKind.INTERNAL, attributes: client }, api.context.active());
      if (jobId !== undefined) span.setAttribute("renderguard.job.id", jobId);
      const context = api.trace.setSpan(api.context.active(), span);
      return jobs.run({ span, context }, async () => {
        try {
          const result = await api.context.with(context, run);
          span.setAttribute("renderguard.billed", "true");
          return result;
        } catch (error) {
          if (isRenderError(error)) {
            span.setAttributes({ "renderguard.billed": String(error.billed), "error.type": error.code });
            span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
          } else {
            // A bug in a policy or transport, not a service's answer: a send may have gone.
            span.setAttribute("renderguard.billed", "unknown");
            span.setStatus({ code: api.SpanStatusCode.ERROR });
          }
          throw error;
        } finally {
          span.end();
        }
      });
    },

    send(ctx: AttemptContext): SendSpan {
      const parent = jobs.getStore()?.context ?? api.context.active();
      const attributes: Api.Attributes = { "http.request.method": "POST", "url.full": url, ...server };
      if (ctx.attempt > 1) attributes["http.request.resend_count"] = ctx.attempt - 1;
      const span = tracer.startSpan("POST", { kind: api.SpanKind.CLIENT, attributes }, parent);
      let headers: Record<string, string> | undefined;
      if (propagate) {
        const carrier: Record<string, string> = {};
        api.propagation.inject(api.trace.setSpan(parent, span), carrier);
        if (Object.keys(carrier).length > 0) headers = carrier;
      }
      return {
        headers,
        end(outcome: Outcome) {
          if (outcome.status !== undefined) span.setAttribute("http.response.status_code", outcome.status);
          span.setAttribute("renderguard.billed", String(outcome.billed));
          if (outcome.code !== undefined) {
            span.setAttribute("error.type", outcome.code);
            span.setStatus({ code: api.SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },

    event(name, attributes) {
      jobs.getStore()?.span.addEvent(name, attributes);
    },
  };
}
