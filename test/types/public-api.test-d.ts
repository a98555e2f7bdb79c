// The public API's types, as a user's editor sees them: what each entry point takes and returns,
// and the mistakes the compiler must refuse. `npm test` type-checks this file (vitest typecheck).
import { describe, expectTypeOf, it } from "vitest";
import {
  type AttemptContext,
  type BatchResult,
  type Billed,
  type ClientStats,
  createRenderClient,
  deadlinePolicy,
  fetchTransport,
  isRenderError,
  type JobOwner,
  type JobRefusal,
  limiterPolicy,
  type LimiterStore,
  type OutcomeRow,
  type Policy,
  Rechecks,
  redisStore,
  type RenderClient,
  RenderError,
  type RenderErrorCode,
  type RenderOptions,
  type RenderRequest,
  type RenderResult,
  retryPolicy,
  type Send,
  sdkTransport,
  systemClock,
  type Transport,
  undiciTransport,
} from "../../src/index.js";

const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k" });

describe("createRenderClient", () => {
  it("returns a client whose render resolves with a billed result", () => {
    expectTypeOf(client).toEqualTypeOf<RenderClient>();
    expectTypeOf(client.render).parameter(0).toEqualTypeOf<RenderRequest>();
    expectTypeOf(client.render({ html: "<p/>" })).resolves.toEqualTypeOf<RenderResult>();
    expectTypeOf<RenderResult["billed"]>().toEqualTypeOf<true>();
    expectTypeOf<RenderResult["body"]>().toEqualTypeOf<Uint8Array>();
    expectTypeOf(client.stats()).toEqualTypeOf<ClientStats>();
    expectTypeOf(client.close()).resolves.toBeVoid();
  });

  it("refuses a request without html, an unknown option and a mistyped one", () => {
    // @ts-expect-error html is required
    void client.render({});
    // @ts-expect-error no such option
    createRenderClient({ baseUrl: "https://render.example", apiKey: "k", retries: 3 });
    // @ts-expect-error timeout is milliseconds, a number
    createRenderClient({ baseUrl: "https://render.example", apiKey: "k", timeout: "10s" });
    // @ts-expect-error the render options are signal, id and timeout
    void client.render({ html: "x" }, { deadline: 5 });
  });

  it("takes a deadline a call, in milliseconds", () => {
    expectTypeOf<RenderOptions["timeout"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf(client.render({ html: "<p/>" }, { timeout: 2_000, signal: AbortSignal.timeout(5_000) })).resolves.toEqualTypeOf<RenderResult>();
    // @ts-expect-error a call's timeout is milliseconds, a number
    void client.render({ html: "x" }, { timeout: "2s" });
  });
});

describe("renderMany", () => {
  it("yields one result a job, narrowed by ok", async () => {
    for await (const outcome of client.renderMany([{ id: "a", html: "<p/>" }])) {
      expectTypeOf(outcome).toEqualTypeOf<BatchResult>();
      if (outcome.ok) expectTypeOf(outcome.result).toEqualTypeOf<RenderResult>();
      else expectTypeOf(outcome.error).toEqualTypeOf<RenderError>();
    }
  });

  it("takes jobs with an id, from a sync or an async source", () => {
    async function* source() {
      yield { id: "a", html: "<p/>" };
    }
    expectTypeOf(client.renderMany(source())).toEqualTypeOf(client.renderMany([]));
    // @ts-expect-error a job needs an id
    void client.renderMany([{ html: "<p/>" }]);
  });

  it("takes a stop signal, which drains the batch", () => {
    void client.renderMany([], { stop: new AbortController().signal, signal: AbortSignal.timeout(1_000) });
    // @ts-expect-error stop is an AbortSignal
    void client.renderMany([], { stop: true });
  });
});

describe("errors", () => {
  it("carry a code of the spec's or renderguard's, billing, and the row they were judged by", () => {
    const error = new RenderError({ code: "rate_limited", message: "slow down", billed: false });
    expectTypeOf(error.code).toEqualTypeOf<RenderErrorCode>();
    expectTypeOf(error.billed).toEqualTypeOf<Billed>();
    expectTypeOf(error.row).toEqualTypeOf<OutcomeRow | undefined>();
    expectTypeOf(error.retryAt).toEqualTypeOf<Date | undefined>();
    expectTypeOf(isRenderError).guards.toEqualTypeOf<RenderError>();
    // @ts-expect-error not a code
    void new RenderError({ code: "teapot", message: "", billed: false });
  });
});

describe("the policy seam", () => {
  it("is (next) => send over a plain context that spreads", () => {
    expectTypeOf<Policy>().toEqualTypeOf<(next: Send) => Send>();
    expectTypeOf<Send>().toEqualTypeOf<(req: RenderRequest, ctx: AttemptContext) => Promise<RenderResult>>();
    expectTypeOf<AttemptContext["signal"]>().toEqualTypeOf<AbortSignal>();
    expectTypeOf<AttemptContext["owner"]>().toEqualTypeOf<JobOwner | undefined>();
    const timing: Policy = (next) => async (req, ctx) => next(req, { ...ctx, attempt: ctx.attempt });
    createRenderClient({ baseUrl: "https://render.example", apiKey: "k", policies: [timing] });
    expectTypeOf(deadlinePolicy(1_000)).toEqualTypeOf<Policy>();
    // Policies composed by hand share one rule for their waits, as the client's do.
    const refusal: JobRefusal = (attempts) => (attempts > 9 ? new RenderError({ code: "aborted", message: "no", billed: false }) : undefined);
    const rechecks = new Rechecks(systemClock, refusal);
    expectTypeOf(retryPolicy({}, undefined, undefined, rechecks)).toExtend<Policy>();
    expectTypeOf(limiterPolicy({}, undefined, undefined, undefined, rechecks)).toExtend<Policy>();
    // @ts-expect-error a refusal is a RenderError, not a string
    new Rechecks(systemClock, () => "refused");
    // @ts-expect-error a context is read-only
    const mutate: Policy = (next) => (req, ctx) => ((ctx.attempt = 2), next(req, ctx));
    void mutate;
  });
});

describe("transports and stores", () => {
  it("are plain interfaces the client takes", () => {
    expectTypeOf(undiciTransport()).toEqualTypeOf<Transport>();
    expectTypeOf(fetchTransport()).toEqualTypeOf<Transport>();
    expectTypeOf(sdkTransport(async () => ({ status: 200, headers: {}, body: new Uint8Array() }))).toEqualTypeOf<Transport>();
    expectTypeOf(redisStore).returns.toEqualTypeOf<LimiterStore>();
    // @ts-expect-error leaseMs is milliseconds, a number
    redisStore({ url: "redis://127.0.0.1:6379", leaseMs: "10s" });
  });
});
