// The types of renderguard/bullmq, as a user's editor sees them. `npm test` type-checks this file.
import type { Queue, Worker } from "bullmq";
import { describe, expectTypeOf, it } from "vitest";
import {
  createRenderWorker,
  type EnqueueResult,
  enqueueRenders,
  type FleetAction,
  fleetOutcomes,
  type RenderJobData,
  type RenderJobResult,
} from "../../src/fleet/index.js";

const clientOptions = { baseUrl: "https://render.example", apiKey: "k" };

describe("renderguard/bullmq", () => {
  it("makes a BullMQ worker of render jobs and their results", () => {
    expectTypeOf(createRenderWorker).returns.toEqualTypeOf<Worker<RenderJobData, RenderJobResult>>();
    expectTypeOf<RenderJobResult["billed"]>().toEqualTypeOf<true>();
    createRenderWorker({ queue: "renders", connection: { host: "127.0.0.1", port: 6379 }, clientOptions, output: async ({ id, body }) => `s3://bucket/${id}-${body.byteLength}` });
    // @ts-expect-error a worker needs somewhere to put the documents
    createRenderWorker({ queue: "renders", connection: "redis://127.0.0.1:6379", clientOptions });
  });

  it("enqueues documents and maps every code to an action", () => {
    expectTypeOf(enqueueRenders).parameter(0).toEqualTypeOf<Queue>();
    expectTypeOf(enqueueRenders).returns.toEqualTypeOf<Promise<EnqueueResult>>();
    expectTypeOf(fleetOutcomes.quota_exceeded).toExtend<FleetAction>();
    // @ts-expect-error a job needs its html
    void enqueueRenders({} as Queue, [{ id: "a" }]);
  });
});
