// HTML of the run report webview: summary, score-per-iteration chart and the beam tree with plans.
// Pure string building so it can be tested without VS Code; the caller supplies the CSP nonce.
import { escapeXml, scoreChartSvg } from './chart';
import { formatSpeedup, formatValue, statusText } from './format';
import type { Failures, ReportCandidate, RunReport, RunSummary, Verdict } from './protocol';

/** Ascending, with Infinity (failed) last and equal to itself (Infinity - Infinity would be NaN). */
/** The run's verdict as the server words it; older servers send only the speedup. */
export function headline(run: RunSummary): string {
  const v = run.verdict;
  if (!v) {
    return `${formatSpeedup(run.speedup)} faster`;
  }
  const source = v.source !== 'hardware' && (v.kind === 'faster' || v.kind === 'no_difference') ? ` (${v.source_label})` : '';
  return [v.text + source, ...v.flags.map((f) => `(${f})`)].join(' ');
}

/** "How it was measured": where the figures come from, the backend, trials, inputs, checks passed. */
export function howMeasuredHtml(verdict: Verdict | undefined): string {
  if (!verdict || verdict.how.length === 0) {
    return '';
  }
  const rows = verdict.how.map(([label, value]) => `<tr><td>${escapeXml(label)}</td><td>${escapeXml(value)}</td></tr>`);
  return `<h3>How it was measured</h3>\n<table class="summary how">${rows.join('')}</table>`;
}

/** "Failed candidates": how many failed for each reason, what it means, and the first one's message. */
export function failuresHtml(failures: Failures | undefined): string {
  if (!failures || failures.failed === 0) {
    return '';
  }
  const rows = failures.byStatus.map(
    (k) =>
      `<tr><td>${k.count}</td><td>${escapeXml(k.label)}</td><td>${escapeXml(k.meaning)}` +
      (k.example ? `<br><span class="why">e.g. ${escapeXml(k.example)}</span>` : '') +
      '</td></tr>',
  );
  return `<h3>Failed candidates</h3>\n<p>${escapeXml(failures.text)}.</p>\n<table class="summary failures">${rows.join('')}</table>`;
}

/** The evaluations row: correct of evaluated, and the failures by why when the server counted them. */
function evaluationsText(report: RunReport): string {
  const run = report.run;
  const counted = report.failures;
  if (!counted) {
    const failed = report.candidates.filter((c) => c.status !== 'ok').length;
    return `${run.evaluations.correct} correct of ${run.evaluations.total} (${failed} failed or rejected)`;
  }
  return `${run.evaluations.correct} correct of ${run.evaluations.total}` + (counted.text ? ` (${counted.text})` : '');
}

export function compareValues(a: number, b: number): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

export interface TreeNode {
  candidate: ReportCandidate;
  children: TreeNode[];
}

/** Candidates arranged by parent; candidates whose parent is unknown become roots. */
export function candidateTree(candidates: readonly ReportCandidate[]): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  for (const c of candidates) {
    nodes.set(c.id, { candidate: c, children: [] });
  }
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.candidate.parentId ? nodes.get(node.candidate.parentId) : undefined;
    (parent ? parent.children : roots).push(node);
  }
  const measured = (c: ReportCandidate): number => (c.status === 'ok' && typeof c.value === 'number' ? c.value : Infinity);
  // Failed candidates sort last even when their (meaningless) value is small.
  const order = (a: TreeNode, b: TreeNode): number =>
    a.candidate.iteration - b.candidate.iteration || compareValues(measured(a.candidate), measured(b.candidate));
  const sortDeep = (list: TreeNode[]): void => {
    list.sort(order);
    list.forEach((n) => sortDeep(n.children));
  };
  sortDeep(roots);
  return roots;
}

/** Id of the fastest correct candidate, or undefined when none was measured. */
export function bestCandidateId(candidates: readonly ReportCandidate[]): string | undefined {
  let best: ReportCandidate | undefined;
  for (const c of candidates) {
    if (c.status === 'ok' && typeof c.value === 'number' && (best === undefined || c.value < (best.value as number))) {
      best = c;
    }
  }
  return best?.id;
}

function speedupOf(c: ReportCandidate, baseline: number | null): number | null {
  return c.status === 'ok' && typeof c.value === 'number' && c.value > 0 && typeof baseline === 'number'
    ? baseline / c.value
    : null;
}

function nodeHtml(node: TreeNode, beamIds: Set<string>, bestId: string | undefined, baseline: number | null): string {
  const c = node.candidate;
  const classes = ['cand', c.status === 'ok' ? 'ok' : 'failed'];
  if (beamIds.has(c.id)) classes.push('beam');
  if (c.id === bestId) classes.push('best');
  const plan = c.plan.trim() === '' ? (c.parentId ? '(no plan text)' : 'baseline') : c.plan.trim();
  const firstLine = plan.split('\n')[0];
  const rest = plan.slice(firstLine.length).trim();
  const tags = [
    c.id === bestId ? '<span class="tag best-tag">best</span>' : '',
    beamIds.has(c.id) ? '<span class="tag">beam</span>' : '',
  ].join('');
  const children =
    node.children.length > 0
      ? `<ul>${node.children.map((n) => nodeHtml(n, beamIds, bestId, baseline)).join('')}</ul>`
      : '';
  return (
    `<li class="${classes.join(' ')}" data-id="${escapeXml(c.id)}">` +
    `<div class="row"><span class="id">${escapeXml(c.id)}</span> <span class="it">it ${c.iteration}</span> ` +
    `<span class="value">${escapeXml(c.status === 'ok' ? formatValue(c.value, c.unit) : c.status)}</span> ` +
    `<span class="speedup">${escapeXml(formatSpeedup(speedupOf(c, baseline)))}</span> ${tags}` +
    (c.model ? ` <span class="model">${escapeXml(c.model)}</span>` : '') +
    `</div>` +
    (c.status !== 'ok' && c.message ? `<div class="why">${escapeXml(c.message)}</div>` : '') +
    `<div class="plan">${escapeXml(firstLine)}` +
    (rest ? `<details><summary>full plan</summary><pre>${escapeXml(rest)}</pre></details>` : '') +
    `</div>${children}</li>`
  );
}

export function reportHtml(report: RunReport, nonce: string, cspSource: string): string {
  const run = report.run;
  const beamIds = new Set(report.iterations.flatMap((it) => it.beam));
  const bestId = bestCandidateId(report.candidates);
  const tree = candidateTree(report.candidates);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'nonce-${nonce}'; img-src ${cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>speedpatch run ${escapeXml(run.runId)}</title>
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1em; }
.summary td { padding: 1px 12px 1px 0; }
.chart { max-width: 100%; color: var(--vscode-foreground); }
ul { list-style: none; padding-left: 1.2em; border-left: 1px solid var(--vscode-tree-indentGuidesStroke, #8884); }
.tree > ul { border-left: none; padding-left: 0; }
.row { white-space: nowrap; }
.id, .model { opacity: 0.7; font-family: var(--vscode-editor-font-family); }
.failed > .row, .failed > .plan { opacity: 0.55; }
.best > .row { font-weight: bold; }
.tag { border: 1px solid currentColor; border-radius: 3px; padding: 0 4px; font-size: 0.85em; }
.best-tag { color: var(--vscode-charts-green, #3c3); }
.plan { margin: 0 0 4px 0.5em; }
.why { margin: 0 0 2px 0.5em; color: var(--vscode-errorForeground, #c33); font-size: 0.9em; }
.failures td { vertical-align: top; }
pre { white-space: pre-wrap; }
</style></head>
<body>
<h2>${escapeXml(run.kernel)}: ${escapeXml(headline(run))}</h2>
<table class="summary">
<tr><td>status</td><td>${escapeXml(statusText(run))}</td></tr>
<tr><td>target / backend</td><td>${escapeXml(run.target)} / ${escapeXml(run.backend)}</td></tr>
<tr><td>baseline</td><td>${escapeXml(formatValue(run.baselineValue, run.unit))}</td></tr>
<tr><td>best</td><td>${escapeXml(formatValue(run.bestValue, run.unit))}</td></tr>
<tr><td>iterations</td><td>${run.iteration} of ${run.iterations}</td></tr>
<tr><td>evaluations</td><td>${escapeXml(evaluationsText(report))}</td></tr>
</table>
${howMeasuredHtml(run.verdict)}
${failuresHtml(report.failures)}
<h3>Score per iteration</h3>
${scoreChartSvg(report)}
<h3>Beam tree</h3>
<p>Each rewrite under the candidate it came from, with the plan that produced it; <b>bold</b> is the winner.</p>
<div class="tree"><ul>${tree.map((n) => nodeHtml(n, beamIds, bestId, run.baselineValue)).join('')}</ul></div>
</body></html>`;
}
