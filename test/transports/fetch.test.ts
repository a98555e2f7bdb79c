import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fetchTransport } from "../../src/transports/fetch.js";
import { closedPort } from "../support/http-server.js";

const base = "http://127.0.0.1:9"; // never reached: nock answers
const request = (url = base) => ({
  url: `${url}/v1/render`,
  headers: { authorization: "Bearer k", "content-type": "application/json" },
  body: '{"html":"x"}',
  request: { html: "x" },
  signal: new AbortController().signal,
});

beforeAll(() => nock.disableNetConnect());
afterEach(() => nock.cleanAll());
afterAll(() => {
  nock.enableNetConnect();
  nock.restore();
});

describe("fetchTransport (nock)", () => {
  it("sends the JSON body with the headers and returns the response untouched", async () => {
    const scope = nock(base, { reqheaders: { authorization: "Bearer k" } })
      .post("/v1/render", { html: "x" })
      .reply(503, "<html>down</html>", { "Retry-After": "7", "X-Renders-Remaining": "12" });
    const response = await fetchTransport().send(request());
    expect(response.status).toBe(503);
    expect(response.headers["retry-after"]).toBe("7");
    expect(response.headers["x-renders-remaining"]).toBe("12");
    expect(Buffer.from(response.body).toString()).toBe("<html>down</html>");
    expect(scope.isDone()).toBe(true);
  });

  it("reports a reset after the request was sent as written", async () => {
    nock(base).post("/v1/render").replyWithError({ code: "ECONNRESET", message: "socket hang up" });
    await expect(fetchTransport().send(request())).rejects.toMatchObject({ failure: "lost", written: true });
  });

  it("reports a refused connection as unwritten", async () => {
    nock(base).post("/v1/render").replyWithError({ code: "ECONNREFUSED", message: "refused" });
    await expect(fetchTransport().send(request())).rejects.toMatchObject({
      failure: "connect",
      written: false,
    });
  });

  it("caps the body size", async () => {
    nock(base).post("/v1/render").reply(200, Buffer.alloc(100));
    await expect(fetchTransport({ maxResponseBytes: 10 }).send(request())).rejects.toMatchObject({
      failure: "too_large",
      status: 200,
    });
  });

  it("uses the fetch it is given", async () => {
    const seen: string[] = [];
    const fake = (async (url: string | URL | Request) => {
      seen.push(String(url));
      return new Response("ok", { status: 200, headers: { "content-type": "application/pdf" } });
    }) as typeof fetch;
    const response = await fetchTransport({ fetch: fake }).send(request("http://render.test"));
    expect(seen).toEqual(["http://render.test/v1/render"]);
    expect(response.headers["content-type"]).toBe("application/pdf");
  });
});

describe("fetchTransport (real loopback)", () => {
  it("reports a refused connection as unwritten", async () => {
    nock.enableNetConnect("127.0.0.1");
    const error = await fetchTransport()
      .send(request(await closedPort()))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: "connect", written: false });
  });
});
