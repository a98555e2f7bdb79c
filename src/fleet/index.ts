/**
 * The BullMQ fleet: a render worker and idempotent enqueueing. Needs the optional peer `bullmq`.
 *
 * @packageDocumentation
 * @module renderguard/bullmq
 */
export { type EnqueueResult, enqueueRenders, renderJobId, renderJobOptions } from "./enqueue.js";
export { type FleetAction, fleetAction, fleetOutcomes } from "./outcomes.js";
export type { OutputFunction, RenderedDocument, RenderedRecord } from "./output.js";
export { createRenderWorker, type RenderJobData, type RenderJobResult, type RenderWorkerOptions } from "./worker.js";
