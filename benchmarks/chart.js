// Line charts as plain SVG strings (no browser, no dependency), written under <output>/charts/.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { outputDir } from "./support.js";

const palette = ["#1f5fbf", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f"];
const size = { width: 960, height: 460, left: 64, right: 250, top: 58, bottom: 48 };

const escapeXml = (text) => String(text).replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]);

/** A round step (1, 2 or 5 times a power of ten) that cuts `max` into about `count` intervals. */
function niceStep(max, count) {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
}

/**
 * Requests per second a server received in one run, from its ledger: `[t, perSecond]` points at the
 * middle of each `binMs` bin (t in seconds after the server started), up to the last arrival.
 */
export function requestsPerSecond(ledger, binMs = 250) {
  const counts = [];
  for (const e of ledger) {
    const bin = Math.floor(e.elapsedMs / binMs);
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  return Array.from({ length: counts.length }, (_, i) => [((i + 0.5) * binMs) / 1000, ((counts[i] ?? 0) * 1000) / binMs]);
}

/**
 * An SVG line chart: one line per `series` (`{ name, points: [[x, y]] }`; the first drawn thickest,
 * on top, the others lighter), an optional dashed `reference` line (`{ name, points }`) and shaded `band`
 * (`{ from, to, label }`, in x units, or an array of them). `yMax` cuts the y axis (lines above it
 * run along the top, and the subtitle says so); by default it fits every point. `height` in pixels.
 */
export function lineChart({ title, subtitle = "", series, reference, band, xLabel, yLabel, yMax, height = size.height }) {
  const { width, left, right, top, bottom } = size;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const all = [...series, ...(reference ? [reference] : [])].flatMap((s) => s.points);
  const xMax = Math.max(1, ...all.map(([x]) => x));
  const peak = Math.max(1, ...all.map(([, y]) => y));
  const yTop = yMax ?? peak;
  const xStep = niceStep(xMax, 8);
  const yStep = niceStep(yTop, 5);
  const xEnd = Math.ceil(xMax / xStep) * xStep;
  const yEnd = Math.ceil(yTop / yStep) * yStep;
  const px = (x) => left + (x / xEnd) * plotW;
  const py = (y) => top + plotH - (Math.min(y, yEnd) / yEnd) * plotH;
  const path = (points) => points.map(([x, y], i) => `${i ? "L" : "M"}${px(x).toFixed(1)},${py(y).toFixed(1)}`).join("");
  const cut = peak > yEnd ? ` The y axis is cut at ${yEnd}/s (highest ${Math.round(peak)}/s).` : "";
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="22" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${left}" y="42" fill="#555">${escapeXml(subtitle + cut)}</text>`,
  ];
  for (const { from, to, label } of [band ?? []].flat()) {
    const [x0, x1] = [px(from), px(Math.min(to, xEnd))];
    out.push(`<rect x="${x0.toFixed(1)}" y="${top}" width="${(x1 - x0).toFixed(1)}" height="${plotH}" fill="#f3d6d6"/>`);
    out.push(`<text x="${(x0 + 4).toFixed(1)}" y="${top + 14}" fill="#a33">${escapeXml(label)}</text>`);
  }
  for (let x = 0; x <= xEnd + 1e-9; x += xStep) {
    out.push(`<line x1="${px(x).toFixed(1)}" y1="${top}" x2="${px(x).toFixed(1)}" y2="${top + plotH}" stroke="#eee"/>`);
    out.push(`<text x="${px(x).toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle">${+x.toFixed(3)}</text>`);
  }
  for (let y = 0; y <= yEnd + 1e-9; y += yStep) {
    out.push(`<line x1="${left}" y1="${py(y).toFixed(1)}" x2="${left + plotW}" y2="${py(y).toFixed(1)}" stroke="#eee"/>`);
    out.push(`<text x="${left - 6}" y="${(py(y) + 4).toFixed(1)}" text-anchor="end">${+y.toFixed(3)}</text>`);
  }
  out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`);
  out.push(`<text x="${left + plotW / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(yLabel)}</text>`);
  if (reference) {
    out.push(`<path d="${path(reference.points)}" fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`);
  }
  [...series.entries()].reverse().forEach(([i, s]) => {
    const weight = i === 0 ? 'stroke-width="3"' : 'stroke-width="1.5" stroke-opacity="0.75"';
    out.push(`<path d="${path(s.points)}" fill="none" stroke="${palette[i % palette.length]}" ${weight} stroke-linejoin="round"/>`);
  });
  const legend = [...series.map((s, i) => ({ name: s.name, color: palette[i % palette.length], dash: "" })), ...(reference ? [{ name: reference.name, color: "#000", dash: "6 4" }] : [])];
  legend.forEach(({ name, color, dash }, i) => {
    const y = top + 8 + i * 20;
    const x = left + plotW + 16;
    out.push(`<line x1="${x}" y1="${y}" x2="${x + 24}" y2="${y}" stroke="${color}" stroke-width="${i === 0 ? 3 : 2}" stroke-dasharray="${dash}"/>`);
    out.push(`<text x="${x + 30}" y="${y + 4}">${escapeXml(name)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

/** Stacks charts made by `lineChart` into one SVG, one under the other, as a dashboard's panels. */
export function stackCharts(charts) {
  const heights = charts.map((svg) => Number(/height="(\d+)"/.exec(svg)[1]));
  const total = heights.reduce((sum, h) => sum + h, 0);
  let y = 0;
  const panels = charts.map((svg, i) => {
    const panel = svg.replace("<svg ", `<svg y="${y}" `);
    y += heights[i];
    return panel;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${size.width}" height="${total}" viewBox="0 0 ${size.width} ${total}">\n${panels.join("")}</svg>\n`;
}

/** Writes `svg` to `<output>/charts/<file>`. */
export function writeChart(file, svg) {
  const dir = join(outputDir, "charts");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, file), svg);
}
