import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { ReferenceServerOptions } from "./options.js";
import { builtinScenarioNames, isBuiltinScenarioName } from "./scenarios.js";
import { checkScenario } from "./validate.js";

/** A command line the CLI cannot run; it exits with status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Help text of `renderguard-server`. */
export const usage = `Usage: renderguard-server [options]

Runs the reference rendering service (POST /v1/render) on loopback, with a fault scenario.

Options:
  --scenario <name>       built-in scenario (default: default): ${builtinScenarioNames.join(", ")}
  --scenario-file <path>  a scenario as a JSON file, instead of --scenario
  --port <n>              port to listen on, 0 for any free one (default: 8787)
  --host <addr>           interface to listen on (default: 127.0.0.1)
  --seed <n>              seed of fault draws and of the default keys (default: 1)
  --api-key <key>         a key to accept (repeatable; replaces the default keys)
  --expose-ledger         serve the billing ledger at GET /_ledger
  -h, --help              show this help`;

/** What the command line asks for: options for `startReferenceServer`, or help. */
export type CliRequest =
  | { readonly help: true }
  | { readonly help: false; readonly options: ReferenceServerOptions };

const integer = (flag: string, text: string, min: number, max: number): number => {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    throw new UsageError(`--${flag} expects an integer in [${min}, ${max}], got "${text}".`);
  }
  return n;
};

function readScenarioFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new UsageError(`--scenario-file: cannot read JSON from ${path}: ${(error as Error).message}`);
  }
}

/** Parses `renderguard-server` arguments (without `node` and the script). Throws `UsageError`. */
export function parseServerArgs(argv: readonly string[]): CliRequest {
  let values: ReturnType<typeof parse>["values"];
  try {
    values = parse(argv).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { help: true };
  if (values.scenario !== undefined && values["scenario-file"] !== undefined) {
    throw new UsageError("Give --scenario or --scenario-file, not both.");
  }
  const name = values.scenario ?? "default";
  if (!isBuiltinScenarioName(name)) {
    throw new UsageError(`Unknown scenario "${name}"; built-in: ${builtinScenarioNames.join(", ")}.`);
  }
  const file = values["scenario-file"];
  let scenario: ReferenceServerOptions["scenario"] = name;
  if (file !== undefined) {
    try {
      scenario = checkScenario(readScenarioFile(file), file);
    } catch (error) {
      throw error instanceof UsageError
        ? error
        : new UsageError(`--scenario-file: ${(error as Error).message}`);
    }
  }
  const options: ReferenceServerOptions = {
    scenario,
    port: integer("port", values.port ?? "8787", 0, 65535),
    host: values.host ?? "127.0.0.1",
    seed: integer("seed", values.seed ?? "1", 0, 2 ** 32 - 1),
    exposeLedger: values["expose-ledger"] ?? false,
    ...(values["api-key"] ? { apiKeys: values["api-key"] } : {}),
  };
  return { help: false, options };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      scenario: { type: "string" },
      "scenario-file": { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      seed: { type: "string" },
      "api-key": { type: "string", multiple: true },
      "expose-ledger": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}
