import type { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { enqueueRenders } from "../../src/fleet/index.js";

const jobs = [{ id: "doc-0", html: "<p>0</p>" }];

describe("enqueueRenders", () => {
  it.each([
    ["renders", 'got "renders".'],
    [{ name: "renders" }, "got an object."],
    [undefined, "got undefined."],
  ])("refuses %j for `queue`: it takes a BullMQ Queue, where createRenderWorker takes its name", async (queue, got) => {
    const error: unknown = await enqueueRenders(queue as unknown as Queue, jobs).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe(`Expected \`queue\` to be a BullMQ Queue (new Queue(name, { connection })), ${got}`);
  });
});
