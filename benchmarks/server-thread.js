// The reference server in a worker thread of its own, for the contender runs. A real service runs
// elsewhere: a client's own work must not hold up its answers, as it does when both share one event
// loop (there, each microsecond a client spends on a job is a microsecond added to every render).
import { once } from "node:events";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { startReferenceServer } from "../dist/server/index.js";

/**
 * Starts the reference server with `options` (`{ scenario, seed }`, plain data) in a new thread.
 * Returns its `url`, `apiKey` and `retryAfter` (the scenario's style), `entries()`, the ledger's
 * entries as of now, and `close()`, which stops the server and ends the thread.
 */
export async function startServerThread(options) {
  const worker = new Worker(new URL(import.meta.url), { workerData: options });
  const ask = async (command) => {
    if (command) worker.postMessage(command);
    const [answer] = await once(worker, "message");
    return answer;
  };
  try {
    const { url, apiKey, retryAfter } = await ask();
    return {
      url,
      apiKey,
      retryAfter,
      entries: () => ask("entries"),
      close: async () => {
        await ask("close");
        await worker.terminate();
      },
    };
  } catch (error) {
    await worker.terminate();
    throw error;
  }
}

if (!isMainThread && parentPort) {
  const server = await startReferenceServer(workerData);
  parentPort.on("message", async (command) => {
    if (command === "entries") parentPort.postMessage(server.ledger.entries());
    if (command === "close") {
      await server.close();
      parentPort.postMessage("closed");
    }
  });
  parentPort.postMessage({ url: server.url, apiKey: server.apiKey, retryAfter: server.scenario.retryAfter });
}
