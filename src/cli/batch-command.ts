import { mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Journal } from "../batch/journal.js";
import { createRenderClient, type RenderClient } from "../client.js";
import { renderEndpoint } from "../core/endpoint.js";
import { redisStore } from "../stores/redis-store.js";
import { systemClock } from "../util/clock.js";
import { describe } from "../util/options.js";
import { createDisplay } from "./display.js";
import { failureReport } from "./failure-report.js";
import { expectFlag, numberFlag, parseFlags, redisFlag, UsageError } from "./flags.js";
import { type HtmlFolderOptions, listHtmlFolder } from "./html-folder.js";
import { type MetricsAddress, serveMetrics } from "./metrics-server.js";
import { journalProblem, outputProblem } from "./preflight.js";
import { summaryTable } from "./progress.js";
import { everyDocumentExists, runBatch } from "./run-batch.js";
import { countItems, readHtmlFolder, readJobsFile, readJobsStream, type SourceItem } from "./sources.js";

/** Exit codes scripts can rely on. */
export const exitCodes = Object.freeze({ ok: 0, someFailed: 1, usage: 2, halted: 3 });

/** What each of `exitCodes` means, as the help texts say it. */
export const exitCodesHelp = `Exit codes:
  0  every document of the input exists, rendered now or by an earlier run (an input with no
     jobs too, with a warning)
  1  some document is missing: a job failed (now, or in an earlier run and not sent again),
     was never started (Ctrl+C, SIGTERM, an output that could not be written) or repeated an
     id; or an unexpected error
  2  usage error, or a check before the first send failed (an --out or --journal that cannot
     be written, a --journal that is the input, an API key a header cannot carry, a metrics port
     in use): nothing was sent
  3  halted: the key was rejected (401, 402) or the setup is wrong (setup_failed: connection
     refused, DNS, TLS or 404 before the service's first answer, or a 2xx that is not a PDF,
     such as a web page, before its first PDF); the jobs it stopped are sent again next run`;

export const batchUsage = `Usage: renderguard batch <jobs.jsonl | - | folder-of-html> --out <dir> [options]

Renders every job and writes <out>/<id>.pdf. The API key comes from RENDER_API_KEY.
A JSONL file (- for standard input) has one {"id": "...", "html": "...", ...} a line, at most
64 MiB. In a folder, each *.html or *.htm file is a job, its id made of its name: accents
dropped, each run of characters other than A-Z a-z 0-9 . _ - made one -, then - and . trimmed
("My Invoice (2).html" gives My-Invoice-2); files whose names give one id are reported and none
is rendered. A job with an empty or blank html is not sent.

Options:
  --out <dir>            where the PDFs go (required)
  --base-url <url>       the service (default: RENDER_BASE_URL)
  --concurrency <n>      requests in flight at once (default: 4)
  --max-billed <n>       spend cap for this run: send nothing more once n renders are billed or
                         maybe billed; the jobs left end at once (default: no cap)
  --timeout <seconds>    a job's deadline, over all its waits and sends (default: 600)
  --retries <n>          resends of a job after its first send (default: 4)
  --expect <pdf|any>     what a 2xx must be to be saved: pdf (application/pdf, starting
                         %PDF-) or any (default: pdf)
  --journal <file>       resume journal: a job finished earlier with the same request is not
                         sent again (default: <out>/.renderguard-journal.jsonl)
  --redis <url>          share the quota, rate limit and halts with every process given the
                         same Redis (redis://host:port) and key; on its own if Redis fails
  --recursive            read a folder's subfolders too, the path in the id (2024/a.html: 2024-a);
                         without it they are named in a warning
  --resend-unknown       send again the jobs journaled as maybe billed with no document
                         (response_lost, aborted mid-send, unexpected_response,
                         output_not_written) and those rendered earlier whose PDF is gone: may
                         bill twice
  --allow-insecure-http  allow http:// to a host that is not loopback
  --metrics-port <port>  serve Prometheus metrics at http://<host>:<port>/metrics while the
                         batch runs, the URL printed on stderr; 0 picks a free port (default:
                         RENDERGUARD_METRICS_PORT, else none)
  --metrics-host <host>  where the metrics listen (default: 127.0.0.1, loopback only)
  -h, --help             show this help

${exitCodesHelp}

Ctrl+C or SIGTERM (timeout, docker stop, Kubernetes, CI cancel) stops starting jobs, lets the
requests out finish and be saved, ends the jobs waiting between sends (free: a rerun sends them)
and prints the summary (exit 1); a second signal, 100 ms or more later, aborts the requests out.`;

export interface BatchArgs {
  readonly input: string;
  readonly out: string;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly concurrency: number;
  readonly journal: string;
  readonly allowInsecureHttp: boolean;
  /** Spend cap, in renders billed or maybe billed; none when undefined. */
  readonly maxBilled?: number | undefined;
  /** A job's deadline, in milliseconds; the client's default when undefined. */
  readonly timeout?: number | undefined;
  /** Resends of a job after its first send; the client's default when undefined. */
  readonly retries?: number | undefined;
  /** What a 2xx must be to be saved as the document; `pdf` when undefined. */
  readonly expect?: "pdf" | "any" | undefined;
  /** Sends again the jobs the journal has as maybe billed with no document; off when undefined. */
  readonly resendUnknown?: boolean | undefined;
  /** A Redis URL whose limiter state this run shares; its own memory when undefined. */
  readonly redis?: string | undefined;
  /** Reads a folder input's subfolders too; off when undefined. */
  readonly recursive?: boolean | undefined;
  /** Where Prometheus metrics are served while the batch runs, and the flag or variable that said so; none when undefined. */
  readonly metrics?: (MetricsAddress & { readonly setBy: string }) | undefined;
}

export function parseBatchArgs(argv: readonly string[], env: NodeJS.ProcessEnv): BatchArgs | "help" {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) return "help";
  if (positionals.length !== 1) throw new UsageError("expected one input: a .jsonl file, - for standard input, or a folder of .html files");
  if (!values.out) throw new UsageError("--out <dir> is required");
  return {
    input: positionals[0] as string,
    out: values.out,
    ...clientArgsOf(values, env),
    journal: values.journal ?? join(values.out, ".renderguard-journal.jsonl"),
    resendUnknown: values["resend-unknown"] === true,
    redis: redisFlag(values.redis),
    recursive: values.recursive === true,
    metrics: metricsFlags(values["metrics-port"], values["metrics-host"], env),
  };
}

/** The flags of the client a command renders with (`batch`, `worker`). */
export const clientFlagTable = {
  "base-url": { type: "string" },
  concurrency: { type: "string" },
  "max-billed": { type: "string" },
  timeout: { type: "string" },
  retries: { type: "string" },
  expect: { type: "string" },
  "allow-insecure-http": { type: "boolean" },
} as const;

/** What `parseFlags` read of `clientFlagTable`. */
type ClientFlagValues = Partial<Record<Exclude<keyof typeof clientFlagTable, "allow-insecure-http">, string>> & { readonly "allow-insecure-http"?: boolean };

/** The client's flags and environment, checked: all of `ClientArgs` but the Redis. */
export function clientArgsOf(values: ClientFlagValues, env: NodeJS.ProcessEnv): Omit<ClientArgs, "redis"> {
  const baseUrl = values["base-url"] ?? env.RENDER_BASE_URL;
  if (!baseUrl) throw new UsageError("--base-url <url> (or RENDER_BASE_URL) is required");
  const apiKey = env.RENDER_API_KEY;
  if (!apiKey) throw new UsageError("RENDER_API_KEY is not set");
  const seconds = numberFlag("--timeout", values.timeout, { positive: true });
  return {
    baseUrl,
    apiKey,
    concurrency: numberFlag("--concurrency", values.concurrency, { integer: true, min: 1 }) ?? 4,
    maxBilled: numberFlag("--max-billed", values["max-billed"], { integer: true, min: 0 }),
    timeout: seconds === undefined ? undefined : seconds * 1000,
    retries: numberFlag("--retries", values.retries, { integer: true, min: 0 }),
    expect: expectFlag(values.expect),
    allowInsecureHttp: values["allow-insecure-http"] === true,
  };
}

const flags = {
  out: { type: "string" },
  ...clientFlagTable,
  journal: { type: "string" },
  redis: { type: "string" },
  "resend-unknown": { type: "boolean" },
  recursive: { type: "boolean" },
  "metrics-port": { type: "string" },
  "metrics-host": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Where the metrics are served: `--metrics-port`, else RENDERGUARD_METRICS_PORT (an empty one is
 * unset), on `--metrics-host` or loopback. Loopback by default: the metrics name the service's
 * error codes and the spend, and another interface is the user's call.
 */
export function metricsFlags(port: string | undefined, host: string | undefined, env: NodeJS.ProcessEnv): BatchArgs["metrics"] {
  const setBy = port === undefined ? "RENDERGUARD_METRICS_PORT" : "--metrics-port";
  const raw = port ?? (env.RENDERGUARD_METRICS_PORT || undefined);
  if (raw === undefined) {
    if (host !== undefined) throw new UsageError("--metrics-host needs --metrics-port <port> (or RENDERGUARD_METRICS_PORT)");
    return undefined;
  }
  if (host?.trim() === "") throw new UsageError(`--metrics-host must be a host name or an IP address, got ${describe(host)}`);
  return { port: numberFlag(setBy, raw, { integer: true, min: 0, max: 65_535 }) as number, host: host ?? "127.0.0.1", setBy };
}

/** The jobs of a batch, read once; `rereadable` when counting them first costs one cheap extra read. */
export interface BatchInput {
  readonly open: () => AsyncGenerator<SourceItem>;
  readonly rereadable: boolean;
  /** The number of items, when known without reading them (a folder's listing). */
  readonly size?: number;
  /** What the input leaves out, said once before the batch starts. */
  readonly warnings?: readonly string[];
}

/**
 * Opens the input: `-` (or `/dev/stdin`) for standard input, a folder of HTML files (listed once,
 * its subfolders too when `recursive`), or a JSONL file. Only a regular file is read twice (once to
 * count, for progress); standard input, a pipe or `<(…)` is read once, since a second read would
 * find it empty.
 */
export async function openInput(input: string, options: HtmlFolderOptions = {}): Promise<BatchInput> {
  const info =
    input === "-" || input === "/dev/stdin"
      ? undefined
      : await stat(input).catch((error: NodeJS.ErrnoException) => {
          throw new UsageError(`cannot read ${input} (${error.code ?? error.message})`);
        });
  if (options.recursive === true && !info?.isDirectory()) throw new UsageError(`--recursive reads a folder, and ${input} is not one`);
  if (info === undefined) return { open: () => readJobsStream(process.stdin, "stdin"), rereadable: false };
  if (info.isDirectory()) {
    const folder = await listHtmlFolder(input, options);
    const notRead = folder.foldersNotRead;
    const shown = notRead.length > 5 ? `${notRead.slice(0, 5).join(", ")} and ${notRead.length - 5} more` : notRead.join(", ");
    const hint = options.recursive === true ? "links to folders are not followed" : "--recursive reads them";
    return {
      open: () => readHtmlFolder(folder),
      rereadable: true,
      size: folder.files.length,
      warnings: notRead.length === 0 ? [] : [`subfolders not read (${hint}): ${shown}`],
    };
  }
  return { open: () => readJobsFile(input), rereadable: info.isFile() };
}

type BatchIo = { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream };

/** Runs `renderguard batch`; resolves with the exit code. */
export async function batchCommand(args: BatchArgs, io: BatchIo) {
  const input = await openInput(args.input, { recursive: args.recursive === true });
  const client = commandClient(args);
  // Listening before --out and the journal are made: a port in use is a usage error that sends
  // nothing and leaves nothing behind.
  const metrics = args.metrics === undefined ? undefined : await startMetrics(args.metrics, client);
  try {
    const problem = (await outputProblem(args.out)) ?? (await journalProblem(args.journal, args.input));
    if (problem) {
      await client.close();
      throw new UsageError(problem);
    }
    if (metrics !== undefined) io.stderr.write(`Metrics: ${metrics.url}\n`);
    return await sendBatch(args, io, input, client);
  } finally {
    // After the client closed: a scrape during the drain still answers, and no socket outlives the batch.
    await metrics?.close();
  }
}

/**
 * The metrics server, or a UsageError naming what to fix: `--metrics-host` when the host does not
 * resolve or is not this machine's, else the port's flag (or variable).
 */
async function startMetrics(metrics: NonNullable<BatchArgs["metrics"]>, client: RenderClient) {
  try {
    return await serveMetrics(metrics, () => client.stats());
  } catch (error) {
    await client.close();
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    const why = code === "EADDRINUSE" ? "is in use" : `cannot be listened on (${code})`;
    const culprit = hostErrors.has(code) ? `--metrics-host ${metrics.host}` : `${metrics.setBy} ${metrics.port}`;
    throw new UsageError(`${culprit}: ${metrics.host}:${metrics.port} ${why}: nothing was sent`);
  }
}

/** Listen errors about the host: it does not resolve (now, or at all), or no interface has its address. */
const hostErrors: ReadonlySet<string> = new Set(["ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL"]);

/** What a command's client is made of: its part of the batch's flags. */
export type ClientArgs = Pick<
  BatchArgs,
  "baseUrl" | "apiKey" | "allowInsecureHttp" | "concurrency" | "redis" | "maxBilled" | "timeout" | "retries" | "expect"
>;

/** The client a command renders with (`batch`, `worker`); a UsageError for an option it refuses. */
export function commandClient(args: ClientArgs): RenderClient {
  try {
    return createRenderClient({
      baseUrl: args.baseUrl,
      apiKey: args.apiKey,
      allowInsecureHttp: args.allowInsecureHttp,
      limiter: {
        concurrency: args.concurrency,
        ...(args.redis === undefined ? {} : { store: redisStore({ url: args.redis }) }),
      },
      maxBilledRenders: args.maxBilled,
      timeout: args.timeout,
      retry: { maxRetries: args.retries },
      expect: args.expect ?? "pdf",
    });
  } catch (error) {
    throw new UsageError(inFlagTerms((error as Error).message));
  }
}

/** A client option's error in the words of the flags that set it. */
export function inFlagTerms(message: string): string {
  return message
    .replace("`baseUrl`", "--base-url (or RENDER_BASE_URL)")
    .replace("`apiKey`", "RENDER_API_KEY")
    .replace("`allowInsecureHttp: true`", "--allow-insecure-http");
}

/** The batch itself, from the journal's opening to the summary; closes the client. */
async function sendBatch(args: BatchArgs, io: BatchIo, input: BatchInput, client: RenderClient) {
  await mkdir(dirname(args.journal), { recursive: true });
  const journal = Journal.open(args.journal, { resendUnknown: args.resendUnknown ?? false });
  for (const problem of journal.problems) {
    io.stderr.write(`${args.journal}:${problem.line}: ignored, ${problem.message}\n`);
  }
  for (const warning of input.warnings ?? []) io.stderr.write(`warning: ${warning}\n`);
  const stop = new AbortController();
  const abort = new AbortController();
  let stoppedBy: string | undefined;
  let stoppedAt = 0;
  // SIGTERM is how timeout, docker stop, Kubernetes and CI cancel: it drains like the first Ctrl+C.
  const onSignal = (signal: NodeJS.Signals) => {
    const now = systemClock.now();
    if (!stop.signal.aborted) {
      stoppedBy = signal === "SIGINT" ? "Ctrl+C" : signal;
      stoppedAt = now;
      stop.abort();
    } else if (now - stoppedAt >= SAME_SIGNAL_MS) {
      abort.abort();
    }
  };
  for (const signal of stopSignals) process.on(signal, onSignal);
  const total = input.size ?? (input.rereadable ? await countItems(input.open()) : undefined);
  const display = createDisplay({ stream: io.stderr, total, stats: () => client.stats() });
  const endpoint = renderEndpoint(args.baseUrl, args.allowInsecureHttp);
  client.onHalt(({ error }) => display.note(`halted: ${error.message}${whatToCheck(error.code, endpoint)}`));
  client.onStoreDegraded(({ error }) => display.note(`${error.message}; this run limits its sends on its own until Redis answers`));
  const failures = failureReport((line) => display.note(line));
  const started = systemClock.now();
  try {
    const { tally, stats } = await runBatch({
      client,
      items: input.open(),
      outDir: args.out,
      journal,
      origin: new URL(args.baseUrl).origin,
      concurrency: 2 * args.concurrency, // jobs waiting (Retry-After, breaker) do not hold the senders back
      total,
      stop: stop.signal,
      abort: abort.signal,
      report: (line, failure) => failures.report(line, failure),
      onProgress: (t) => display.update(t),
    });
    failures.finish();
    display.close();
    io.stdout.write(`${summaryTable(tally, stats, systemClock.now() - started, args.redis !== undefined)}\n`);
    io.stdout.write(`outputs in ${args.out}, journal ${args.journal}\n`);
    if (abort.signal.aborted) {
      io.stdout.write(
        `aborted by a second signal: run the same command again to resume; the jobs cut short mid-send may have been billed and are not sent again (--resend-unknown sends them, may bill twice)\n`,
      );
    } else if (stoppedBy !== undefined) {
      io.stdout.write(`stopped by ${stoppedBy}: run the same command again to resume\n`);
    }
    if (stats.halted) return exitCodes.halted;
    return everyDocumentExists(tally) ? exitCodes.ok : exitCodes.someFailed;
  } finally {
    display.close();
    journal.close();
    await client.close();
    // Removed last: a second signal that comes while the client closes must not kill the process
    // and lose the exit code.
    for (const signal of stopSignals) process.off(signal, onSignal);
  }
}

/** What to check after a halt on the key: the service's words do not say where the key came from. */
export function whatToCheck(code: string, endpoint: string): string {
  if (code === "invalid_api_key") return ` Check RENDER_API_KEY: ${endpoint} refused the key it holds.`;
  if (code === "payment_required") return ` Check the account of the key in RENDER_API_KEY: ${endpoint} asks for payment.`;
  return "";
}

/** The signals that stop a batch: the first drains it, the next aborts the jobs in progress. */
export const stopSignals = ["SIGINT", "SIGTERM"] as const;

/**
 * A signal this soon after the first is the same one, not a second: a signal to a process group
 * can reach a process twice at once (GNU timeout signals its child, then the group), and taken as
 * a second it would abort renders already paid for. A person pressing Ctrl+C again takes longer.
 */
export const SAME_SIGNAL_MS = 100;
