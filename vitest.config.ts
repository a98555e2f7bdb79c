import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    // The public API's type tests (test/types/*.test-d.ts): checked by tsc, never run.
    typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"], tsconfig: "tsconfig.typetest.json" },
  },
});
