import { defineConfig } from "vitest/config";

/**
 * Files whose assertions are figures of the send-rate learner on real loopback HTTP (429s, accepted
 * sends a half second): paced by timers, they count bunched sends when another file takes the CPU
 * (a limit stepping down: 29-42 429s of 700 alone, 47-93 beside two busy processes).
 */
const learnerFigures = ["test/e2e/limiter-scenarios.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    // Most files wait on loopback servers, worker processes and Redis rather than compute: one
    // file a CPU, not Vitest's default of one fewer (a single file at a time on a 2-CPU machine).
    maxWorkers: "100%",
    projects: [
      {
        extends: true,
        test: {
          name: "tests",
          include: ["test/**/*.test.ts"],
          exclude: learnerFigures,
          // The public API's type tests (test/types/*.test-d.ts): checked by tsc, never run.
          typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"], tsconfig: "tsconfig.typetest.json" },
        },
      },
      // After the others, one file at a time: nothing else runs beside them.
      { extends: true, test: { name: "learner figures", include: learnerFigures, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
