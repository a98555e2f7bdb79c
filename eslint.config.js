import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", "docs/api/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["benchmarks/**/*.js", "test/**/*.mjs", "examples/**/*.mjs", "eslint.config.js"],
    languageOptions: { globals: { console: "readonly", process: "readonly", Buffer: "readonly", URL: "readonly", globalThis: "readonly", AbortController: "readonly", setTimeout: "readonly", clearTimeout: "readonly", fetch: "readonly" } },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      "no-console": "off",
    },
  },
);
