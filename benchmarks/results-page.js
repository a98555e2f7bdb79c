// RESULTS.md: every benchmark's output from one run, with the machine, Node, the date and the command.
import { cpus, release, totalmem, type } from "node:os";
import { fmt } from "./support.js";

const duration = (ms) => {
  const seconds = Math.round(ms / 1000); // rounded once, so 119.6 s reads 2 min 0 s, not 1 min 60 s
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
};

/** The page for `benches` (`{ name, code, output, ms }`, in run order), run by `command` in `ms`. */
export function resultsPage({ benches, command, smoke, ms }) {
  const cores = cpus();
  const charts = benches.flatMap((b) => [...b.output.matchAll(/^ {2}chart: (\S+)$/gm)].map((m) => m[1]));
  const lines = [
    "# Benchmark results",
    "",
    `Written by \`${command}\` (benchmarks/run.js); not edited by hand: run the command again to renew it.`,
    ...(smoke ? ["", "**Smoke run**: few jobs and short scenarios; it checks that the benchmarks run, and its figures mean little."] : []),
    "",
    `- Date: ${new Date().toISOString().replace("T", " ").slice(0, 16)} UTC`,
    `- Machine: ${cores[0]?.model.trim() ?? "unknown CPU"}, ${cores.length} cores, ${fmt(totalmem() / 2 ** 30, 1)} GiB, ${type()} ${release()}`,
    `- Node: ${process.version}`,
    `- Command: \`${command}\`, ${duration(ms)} in all`,
    "",
    "Absolute times depend on the machine and on whatever else it ran: compare the contenders of one",
    "table with each other (the ratio columns), not times across tables or runs.",
    "",
    ...(charts.length ? [`Charts: ${charts.map((file) => `[${file.replace(/^charts\/|\.svg$/g, "")}](${file})`).join(", ")}.`, ""] : []),
  ];
  for (const b of benches) {
    lines.push(`## ${b.name}`, "", `${duration(b.ms)}${b.code === 0 ? "" : `, **exited with ${b.code}**`}.`, "", "```text", b.output.trimEnd(), "```", "");
  }
  return `${lines.join("\n")}\n`;
}
