/** The commands that need bullmq, in one module that `main` loads only when one of them is asked for. */
export { enqueueCommand } from "./enqueue-command.js";
export { resumeCommand } from "./resume-command.js";
export { statusCommand } from "./status-command.js";
export { parseWorkerArgs, workerCommand, workerUsage } from "./worker-command.js";
