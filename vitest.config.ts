import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    // Most files wait on loopback servers, worker processes and Redis rather than compute: one
    // file a CPU, not Vitest's default of one fewer (a single file at a time on a 2-CPU machine).
    maxWorkers: "100%",
    // The public API's type tests (test/types/*.test-d.ts): checked by tsc, never run.
    typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"], tsconfig: "tsconfig.typetest.json" },
  },
});
