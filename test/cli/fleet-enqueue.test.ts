import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { fleetSetup } from "../support/fleet-cli.js";
import { redisAvailable, sharedRedis } from "../support/redis.js";

describe.skipIf(!redisAvailable)("renderguard enqueue", () => {
  let redis: { url: string; stop(): Promise<void> };
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(() => redis?.stop());

  it("adds every job once: the same input again adds nothing, and a changed document is added again", async () => {
    const { queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    const input = jobsFile(dir, 5);
    const first = runCli(["enqueue", input, ...where], {});
    expect((await first.exit)[0]).toBe(0);
    expect(first.out()).toBe(`5 added, 0 already in the queue ${queue.name}\n`);

    const again = runCli(["enqueue", input, ...where], {});
    expect((await again.exit)[0]).toBe(0);
    expect(again.out()).toBe(`0 added, 5 already in the queue ${queue.name}\n`);

    const changed = join(dir, "changed.jsonl");
    const lines = Array.from({ length: 5 }, (_, i) => JSON.stringify({ id: `doc-${i}`, html: i === 2 ? "<p>2, revised</p>" : `<p>${i}</p>` }));
    writeFileSync(changed, `${lines.join("\n")}\n`);
    const revised = runCli(["enqueue", changed, ...where], {});
    expect((await revised.exit)[0]).toBe(0);
    expect(revised.out()).toBe(`1 added, 4 already in the queue ${queue.name}\n`);
    // The first version of doc-2, still waiting, gave way to the revised one.
    const waiting = await queue.getJobs(["wait"]);
    expect(waiting.map((job) => job.data.html).sort()).toEqual(["<p>0</p>", "<p>1</p>", "<p>2, revised</p>", "<p>3</p>", "<p>4</p>"]);
  });

  it("reports a line that is not a job and a repeated id, adds the rest, and exits 1", async () => {
    const { queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    const input = jobsFile(dir, 2, ["not json", JSON.stringify({ id: "DOC-1", html: "<p>other</p>" })]);
    const run = runCli(["enqueue", input, ...where], {});
    expect((await run.exit)[0]).toBe(1);
    expect(run.err()).toContain(`${input}:3: not added, not JSON`);
    expect(run.err()).toContain(`${input}:4: not added, the id "DOC-1" differs only in case from "doc-1" earlier in this input`);
    expect(run.out()).toBe(`2 added, 0 already in the queue ${queue.name}, 2 not jobs (see above)\n`);
    expect(await queue.getJobCounts("wait")).toEqual({ wait: 2 });
  });

  it("reads a folder of HTML files as batch does, the id made of each file's name", async () => {
    const { queue, where } = await fleetSetup(redis.url);
    const dir = workdir();
    writeFileSync(join(dir, "My Invoice (2).html"), "<p>invoice</p>");
    const run = runCli(["enqueue", dir, ...where], {});
    expect((await run.exit)[0]).toBe(0);
    expect((await queue.getJobs(["wait"])).map((job) => (job.data as { id: string }).id)).toEqual(["My-Invoice-2"]);
  });
});
