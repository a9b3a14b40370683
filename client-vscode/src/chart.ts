// Score-per-iteration chart of a run as inline SVG (the webview loads nothing from outside).
// Lower metric values are better (cycles, ms): the line is the best correct value after each iteration,
// the dots are every correct candidate measured in that iteration.
import type { RunReport } from './protocol';

export interface ChartGeometry {
  width: number;
  height: number;
  margin: { left: number; right: number; top: number; bottom: number };
}

export const DEFAULT_GEOMETRY: ChartGeometry = {
  width: 560,
  height: 260,
  margin: { left: 72, right: 16, top: 16, bottom: 40 },
};

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

function finite(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function shortNumber(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${(value / 1e6).toPrecision(3)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toPrecision(3)}k`;
  return Number.isInteger(value) ? String(value) : value.toPrecision(3);
}

export interface ChartPoint {
  iteration: number;
  value: number;
}

/** The best-so-far line: per iteration, the report's best value (iteration 0 is the baseline). */
export function bestLine(report: RunReport): ChartPoint[] {
  return report.iterations
    .filter((it) => finite(it.best))
    .map((it) => ({ iteration: it.iteration, value: it.best as number }))
    .sort((a, b) => a.iteration - b.iteration);
}

export function candidateDots(report: RunReport): ChartPoint[] {
  return report.candidates
    .filter((c) => c.status === 'ok' && finite(c.value))
    .map((c) => ({ iteration: c.iteration, value: c.value as number }));
}

export function scoreChartSvg(report: RunReport, geometry: ChartGeometry = DEFAULT_GEOMETRY): string {
  const line = bestLine(report);
  const dots = candidateDots(report);
  const { width, height, margin } = geometry;
  const unit = report.run.unit || 'value';
  if (line.length === 0 && dots.length === 0) {
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" role="img">` +
      `<text x="${width / 2}" y="${height / 2}" text-anchor="middle">No measured candidates yet</text></svg>`
    );
  }
  const all = [...line, ...dots];
  const maxIteration = Math.max(1, report.run.iterations, ...all.map((p) => p.iteration));
  let low = Math.min(...all.map((p) => p.value));
  let high = Math.max(...all.map((p) => p.value));
  if (low === high) {
    // A flat series still needs a visible band around it.
    low -= Math.abs(low) * 0.1 || 1;
    high += Math.abs(high) * 0.1 || 1;
  }
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const x = (iteration: number): number => margin.left + (iteration / maxIteration) * plotW;
  const y = (value: number): number => margin.top + (1 - (value - low) / (high - low)) * plotH;
  const r = (n: number): string => n.toFixed(1);

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(unit)} per iteration">`,
  );
  // Axes with ticks at every iteration and at the low/high values.
  parts.push(`<g class="axes" stroke="currentColor" stroke-opacity="0.5">`);
  parts.push(`<line x1="${margin.left}" y1="${margin.top + plotH}" x2="${margin.left + plotW}" y2="${margin.top + plotH}"/>`);
  parts.push(`<line x1="${margin.left}" y1="${margin.top}" x2="${margin.left}" y2="${margin.top + plotH}"/>`);
  parts.push(`</g><g class="labels" fill="currentColor" font-size="11">`);
  for (let i = 0; i <= maxIteration; i++) {
    parts.push(`<text x="${r(x(i))}" y="${margin.top + plotH + 14}" text-anchor="middle">${i}</text>`);
  }
  parts.push(`<text x="${margin.left + plotW / 2}" y="${height - 6}" text-anchor="middle">iteration</text>`);
  for (const v of [low, high]) {
    parts.push(`<text x="${margin.left - 6}" y="${r(y(v) + 4)}" text-anchor="end">${escapeXml(shortNumber(v))}</text>`);
  }
  parts.push(
    `<text transform="rotate(-90)" x="${-(margin.top + plotH / 2)}" y="14" text-anchor="middle">${escapeXml(unit)} (lower is better)</text>`,
  );
  parts.push(`</g>`);
  for (const d of dots) {
    parts.push(
      `<circle class="candidate" cx="${r(x(d.iteration))}" cy="${r(y(d.value))}" r="3" fill="currentColor" fill-opacity="0.35"><title>iteration ${d.iteration}: ${escapeXml(shortNumber(d.value))} ${escapeXml(unit)}</title></circle>`,
    );
  }
  if (line.length > 0) {
    const path = line.map((p, i) => `${i === 0 ? 'M' : 'L'}${r(x(p.iteration))},${r(y(p.value))}`).join(' ');
    parts.push(`<path class="best" d="${path}" fill="none" stroke="#3794ff" stroke-width="2"/>`);
    for (const p of line) {
      parts.push(
        `<circle class="best-point" cx="${r(x(p.iteration))}" cy="${r(y(p.value))}" r="4" fill="#3794ff"><title>best after iteration ${p.iteration}: ${escapeXml(shortNumber(p.value))} ${escapeXml(unit)}</title></circle>`,
      );
    }
  }
  parts.push(`</svg>`);
  return parts.join('');
}
