import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseServerArgs, UsageError } from "../../src/server/cli-args.js";
import { checkScenario } from "../../src/server/index.js";
import { tempDir } from "../support/temp-dir.js";

const file = (content: string): string => {
  const path = join(tempDir("rg-scenario-"), "s.json");
  writeFileSync(path, content);
  return path;
};

describe("renderguard-server arguments", () => {
  it("defaults to the default scenario on 127.0.0.1:8787", () => {
    expect(parseServerArgs([])).toEqual({
      help: false,
      options: { scenario: "default", port: 8787, host: "127.0.0.1", seed: 1, exposeLedger: false },
    });
  });

  it("reads every flag", () => {
    const req = parseServerArgs([
      "--scenario",
      "deploy-burst",
      "--port",
      "0",
      "--seed",
      "9",
      "--api-key",
      "a",
      "--api-key",
      "b",
      "--expose-ledger",
    ]);
    expect(req).toMatchObject({
      options: { scenario: "deploy-burst", port: 0, seed: 9, apiKeys: ["a", "b"], exposeLedger: true },
    });
    expect(parseServerArgs(["-h"])).toEqual({ help: true });
  });

  it("loads and checks a scenario file", () => {
    const scenario = { description: "x", faults: [{ fault: "reset", probability: 0.5 }] };
    expect(parseServerArgs(["--scenario-file", file(JSON.stringify(scenario))])).toMatchObject({
      options: { scenario },
    });
  });

  it.each([
    [["--bogus"], /Unknown option/],
    [["--scenario", "nope"], /Unknown scenario "nope"/],
    [["--port", "70000"], /--port expects an integer/],
    [["--port", "abc"], /--port expects an integer/],
    [["--scenario", "quota", "--scenario-file", "x.json"], /not both/],
    [["--scenario-file", "/nonexistent/s.json"], /cannot read JSON/],
    [["positional"], /positional/],
  ])("%j is a usage error", (argv, message) => {
    expect(() => parseServerArgs(argv)).toThrow(UsageError);
    expect(() => parseServerArgs(argv)).toThrow(message);
  });

  it.each([
    ["{", /cannot read JSON/],
    ['{"faults":[{"fault":"fire"}]}', /faults\[0\]\.fault/],
    ['{"renderDelay":5}', /unknown field/],
  ])("--scenario-file holding %s is a usage error", (content, message) => {
    const argv = ["--scenario-file", file(content)];
    expect(() => parseServerArgs(argv)).toThrow(UsageError);
    expect(() => parseServerArgs(argv)).toThrow(message);
  });
});

describe("example scenario files", () => {
  const dir = new URL("../../scenarios/", import.meta.url);
  const files = readdirSync(dir).filter((name) => name.endsWith(".json"));

  it("exist", () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)("%s is a valid scenario the CLI accepts", (name) => {
    const path = fileURLToPath(new URL(name, dir));
    const scenario = checkScenario(JSON.parse(readFileSync(path, "utf8")));
    expect(parseServerArgs(["--scenario-file", path])).toMatchObject({ options: { scenario } });
  });
});
