import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bestCandidateId, candidateTree, reportHtml } from '../src/reportHtml';
import { candidate, report } from './fixtures';

test('candidates nest under their parents, fastest sibling first', () => {
  const roots = candidateTree(report().candidates);
  assert.deepEqual(roots.map((n) => n.candidate.id), ['c0']);
  assert.deepEqual(roots[0].children.map((n) => n.candidate.id), ['c1', 'c2', 'bad']);
  assert.deepEqual(roots[0].children[0].children.map((n) => n.candidate.id), ['c3']);
});

test('a candidate whose parent is missing becomes a root', () => {
  const roots = candidateTree([candidate({ id: 'x', parentId: 'gone', iteration: 3 })]);
  assert.deepEqual(roots.map((n) => n.candidate.id), ['x']);
});

test('the best candidate is the fastest correct one, never an incorrect one', () => {
  assert.equal(bestCandidateId(report().candidates), 'c3');
});

test('the report shows the speedup, chart and plans, escaped, under a nonce-only CSP', () => {
  const html = reportHtml(report(), 'n0nce', 'vscode-resource:');
  assert.match(html, /<h2>matmul: 2\.50x faster<\/h2>/);
  assert.match(html, /<svg /);
  assert.match(html, /Retile to 16x16 tiles/);
  assert.match(html, /Skip &lt;the&gt; bias/);
  assert.match(html, /default-src 'none'/);
  assert.ok(!html.includes('<script'), 'the report runs no script');
  assert.match(html, /<li class="cand ok beam best" data-id="c3">/);
});

test('the report heads with the server verdict and shows how it was measured', () => {
  const r = report();
  r.run.verdict = {
    kind: 'faster', speedup: 1.24, text: '1.24x faster', detail: '24,119 -> 19,484 cycles', source: 'model',
    source_label: 'cycle model', flags: [], how: [['backend', 'gemmini-native'], ['figures from', 'model'], ['trials', '2']],
  };
  const html = reportHtml(r, 'n0nce', 'vscode-resource:');
  assert.match(html, /<h2>matmul: 1\.24x faster \(cycle model\)<\/h2>/);
  assert.match(html, /<h3>How it was measured<\/h3>/);
  assert.match(html, /<td>figures from<\/td><td>model<\/td>/);
});

test('a difference inside the noise reads as no measurable difference, not as a speedup', () => {
  const r = report();
  r.run.verdict = {
    kind: 'no_difference', speedup: 1.01, text: 'no measurable difference (1.01x, noise ±2.0%)', detail: '', source: 'hardware',
    source_label: 'hardware', flags: [], how: [],
  };
  const html = reportHtml(r, 'n0nce', 'vscode-resource:');
  assert.match(html, /<h2>matmul: no measurable difference \(1\.01x, noise ±2\.0%\)<\/h2>/);
  assert.ok(!html.includes('How it was measured'));
});

test('failed candidates are listed by why, with what each reason means and an example message', () => {
  const r = report();
  r.candidates[3].message = 'output differs from the reference';
  r.failures = {
    evaluated: 4,
    failed: 1,
    text: '1 of 4 candidates failed: 1 incorrect',
    byStatus: [
      { status: 'incorrect', label: 'incorrect', meaning: 'its output differs from the reference', count: 1, example: 'output <differs>' },
    ],
  };
  const html = reportHtml(r, 'n0nce', 'vscode-resource:');
  assert.match(html, /<td>evaluations<\/td><td>7 correct of 9 \(1 of 4 candidates failed: 1 incorrect\)<\/td>/);
  assert.match(html, /<h3>Failed candidates<\/h3>/);
  assert.match(html, /<tr><td>1<\/td><td>incorrect<\/td><td>its output differs from the reference<br><span class="why">e\.g\. output &lt;differs&gt;<\/span>/);
  // the failed candidate's own row says why it failed
  assert.match(html, /data-id="bad">.*<div class="why">output differs from the reference<\/div>/s);
});

test('a run without failures has no failed-candidates section', () => {
  const r = report();
  r.failures = { evaluated: 4, failed: 0, text: '', byStatus: [] };
  const html = reportHtml(r, 'n0nce', 'vscode-resource:');
  assert.ok(!html.includes('Failed candidates'));
  assert.match(html, /<td>evaluations<\/td><td>7 correct of 9<\/td>/);
});
