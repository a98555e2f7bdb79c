import { authenticate } from "./auth.js";
import { readMarkers, runEngine } from "./engine.js";
import type { FirstSends } from "./first-sends.js";
import type { Account, KeyRing } from "./keys.js";
import { chance, type Random } from "./random.js";
import { judgeBody } from "./request.js";
import type { Decision } from "./respond.js";
import {
  activeFaults,
  type FaultKind,
  type FaultWindow,
  type ResolvedScenario,
  rateLimitedFaultRetryAfterMs,
} from "./scenario.js";
import type { Timers } from "./timers.js";

/** A received request, body read. */
export interface IncomingRender {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  /** The raw body; undefined when it was over `maxBodyBytes`. */
  readonly body: Uint8Array | undefined;
  /** sha256 of the whole raw body, hex (as in the ledger). */
  readonly bodySha256: string;
}

/** The server state a request is judged against. */
export interface HandlerContext {
  readonly scenario: ResolvedScenario;
  readonly keys: KeyRing;
  readonly random: Random;
  readonly timers: Timers;
  readonly now: () => number;
  /** Server start, in milliseconds since the epoch: time zero of the fault timeline. */
  readonly startedAt: number;
  /** Bodies received so far, for `firstSendOnly` fault windows. */
  readonly firstSends: FirstSends;
}

/** The answer, whether the engine's work was billed, and the key it counts against. */
export interface Handled {
  readonly decision: Decision;
  readonly billed: boolean;
  readonly account: Account | undefined;
}

/**
 * Judges a request in the order a real deployment meets it: the proxy in front, service faults
 * (`internal_error` comes before auth and before the input is judged: spec, "Rules shown" 4), routing,
 * auth, account standing, rate limit (scripted `rate_limited` faults, then the key's bucket), the
 * body, quota, demo concurrency, then the engine. Every random draw happens synchronously on arrival,
 * so one seed and one request order give one run.
 */
export async function handle(req: IncomingRender, ctx: HandlerContext): Promise<Handled> {
  const now = ctx.now();
  const elapsed = now - ctx.startedAt;
  const faults = activeFaults(ctx.scenario, elapsed);
  const firstSend = ctx.firstSends.arrive(req.bodySha256, elapsed);
  // A resend skips a firstSendOnly window without a draw, so it does not shift later draws.
  const hit = (kind: FaultKind): FaultWindow | undefined =>
    faults.find(
      (w) => w.fault === kind && (!w.firstSendOnly || firstSend) && chance(ctx.random, w.probability ?? 1),
    );
  const account = authenticate(ctx.keys, req.authorization, elapsed);
  const answer = (decision: Decision, billed = false): Handled => ({ decision, billed, account });
  const error = (
    code: Extract<Decision, { kind: "error" }>["code"],
    retryAfterMs?: number,
    message?: string,
  ) => answer({ kind: "error", code, retryAfterMs, message });

  if (hit("drop")) return answer({ kind: "reset" });
  const proxy = hit("proxy_503");
  if (proxy) return answer({ kind: "proxy", status: 503, billed: false, retryAfterMs: proxy.retryAfterMs });
  const outage = hit("internal_error");
  if (outage) return error("internal_error", outage.retryAfterMs);
  if (req.method !== "POST" || req.path !== "/v1/render") return error("not_found");
  if (!account) return error("invalid_api_key");
  if (account.state === "arrears") return error("payment_required");
  // Where the real limiter answers, so it looks like one; it takes no token, as a refused request doesn't.
  const limited = hit("rate_limited");
  if (limited) return error("rate_limited", limited.retryAfterMs ?? rateLimitedFaultRetryAfterMs);
  const wait = account.bucket?.take(now) ?? 0;
  if (wait > 0) return error("rate_limited", wait);
  const judged = judgeBody(req.body, req.contentType);
  if (!judged.ok) return error(judged.code, undefined, judged.message);
  if (account.quota?.remaining(now) === 0) return error("quota_exceeded", account.quota.msUntilRefill(now));
  if (account.demo && account.inFlight >= ctx.scenario.demo.maxConcurrent) {
    return error("demo_busy", ctx.scenario.demo.retryAfterMs);
  }

  const markers = readMarkers(judged.html);
  const { renderDelayMs, renderJitterMs, renderTimeoutMs } = ctx.scenario;
  const jitter = renderJitterMs > 0 ? ctx.random() * renderJitterMs : 0;
  const delayMs = markers.timeout ? Number.POSITIVE_INFINITY : (markers.delayMs ?? renderDelayMs + jitter);
  const fail = markers.fail || hit("render_failed") !== undefined;
  const lost = markers.reset ? "reset" : hit("proxy_502") ? "proxy_502" : hit("reset") ? "reset" : undefined;
  const drip = hit("drip");

  account.quota?.reserve(now);
  account.inFlight += 1;
  try {
    const result = await runEngine(
      { html: judged.html, delayMs, timeoutMs: renderTimeoutMs, fail },
      ctx.timers,
    );
    if (result.kind === "timeout") {
      account.quota?.release(); // not billed, so not counted (spec table: render_timeout is free)
      return error("render_timeout");
    }
    // From here the engine ran: billed whatever the client gets (spec, "Rules shown" 5).
    if (lost === "reset") return answer({ kind: "reset" }, true);
    if (lost === "proxy_502") return answer({ kind: "proxy", status: 502, billed: true }, true);
    if (result.kind === "failed") return answer({ kind: "error", code: "render_failed" }, true);
    return answer({ kind: "pdf", body: result.pdf, dripMs: drip ? (drip.dripMs ?? 1000) : undefined }, true);
  } finally {
    account.inFlight -= 1;
  }
}
