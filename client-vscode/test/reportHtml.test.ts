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
