import { describe, expect, it } from "vitest";
import { renderEndpoint } from "../../src/core/endpoint.js";

describe("renderEndpoint", () => {
  it.each([
    ["https://render.example", "https://render.example/v1/render"],
    ["https://render.example/", "https://render.example/v1/render"],
    ["https://render.example/api/", "https://render.example/api/v1/render"],
    ["https://render.example/v1", "https://render.example/v1/render"],
    ["https://render.example/v1/", "https://render.example/v1/render"],
    ["https://render.example/v1/render", "https://render.example/v1/render"],
    ["https://render.example/api/v1/render/", "https://render.example/api/v1/render"],
    ["https://render.example/v10", "https://render.example/v10/v1/render"],
    ["https://render.example/renderv1", "https://render.example/renderv1/v1/render"],
  ])("takes %s as %s", (baseUrl, endpoint) => {
    expect(renderEndpoint(baseUrl, false)).toBe(endpoint);
  });
});
