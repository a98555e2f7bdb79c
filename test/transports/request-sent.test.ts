import { Dispatcher } from "undici";
import { describe, expect, it } from "vitest";
import { RequestSentProbe } from "../../src/transports/request-sent.js";

/** A dispatcher that hands every handler to `run` instead of a socket. */
class ScriptedDispatcher extends Dispatcher {
  constructor(private readonly run: (handler: Dispatcher.DispatchHandler & { onRequestSent?: () => void }) => void) {
    super();
  }

  override dispatch(_options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.run(handler);
    return true;
  }
}

const options: Dispatcher.DispatchOptions = { origin: "http://127.0.0.1", path: "/v1/render", method: "POST" };

describe("RequestSentProbe", () => {
  it("is false until undici reports the whole request written, then true, and still tells the handler", () => {
    let told = 0;
    let written: (() => void) | undefined;
    const probe = new RequestSentProbe(new ScriptedDispatcher((handler) => (written = handler.onRequestSent)));
    probe.dispatch(options, { onError: () => undefined, onRequestSent: () => told++ } as Dispatcher.DispatchHandler);
    expect(probe.sent).toBe(false);
    written?.();
    expect(probe.sent).toBe(true);
    expect(told).toBe(1);
  });

  it("says it cannot know for a handler of undici's new API, which is never told", () => {
    const handler: Dispatcher.DispatchHandler = { onRequestStart: () => undefined };
    let passed: Dispatcher.DispatchHandler | undefined;
    const probe = new RequestSentProbe(new ScriptedDispatcher((given) => (passed = given)));
    probe.dispatch(options, handler);
    expect(probe.sent).toBeUndefined();
    expect(passed).toBe(handler);
  });
});
