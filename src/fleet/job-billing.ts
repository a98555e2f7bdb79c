import type { Billed, RenderErrorCode } from "../core/errors.js";
import { outcomeRow } from "../core/outcomes.js";

/** Codes only the fleet worker gives: a render it could not store, one an earlier run left missing. Both were billed. */
const workerCodesBilled: Readonly<Record<string, Billed>> = { output_not_written: true, output_missing: true };

/** A failed job's code: the first word of its reason, as the fleet worker writes it (`code (status): message`). */
export function failureCode(reason: string): string {
  return /^([a-z]+(?:_[a-z]+)*)(?=:| \()/.exec(reason)?.[1] ?? "other";
}

/** Whether a failed job's code bills: the outcome table's word, `unknown` for what it does not know. */
export function billingOf(code: string): Billed {
  return workerCodesBilled[code] ?? outcomeRow(code as RenderErrorCode)?.billed ?? "unknown";
}

/** What a job in `state` (BullMQ's) billed, as `status` counts it: one render a completed job, a failed one by its code, none an unfinished one. */
export function billingOfJob(state: string, failedReason: string | undefined): Billed {
  if (state === "completed") return true;
  if (state === "failed") return billingOf(failureCode(failedReason ?? ""));
  return false;
}
