import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bestLine, candidateDots, escapeXml, scoreChartSvg } from '../src/chart';
import { report } from './fixtures';

test('the best line has one point per iteration, baseline first', () => {
  assert.deepEqual(bestLine(report()), [
    { iteration: 0, value: 1000 },
    { iteration: 1, value: 600 },
    { iteration: 2, value: 400 },
  ]);
});

test('incorrect candidates are not plotted even when their value looks fast', () => {
  assert.ok(!candidateDots(report()).some((p) => p.value === 100));
});

test('the chart is self-contained SVG with the line and one dot per correct candidate', () => {
  const svg = scoreChartSvg(report());
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(!/https?:\/\/(?!www\.w3\.org\/2000\/svg)/.test(svg), 'no external references');
  assert.equal((svg.match(/class="best-point"/g) ?? []).length, 3);
  assert.equal((svg.match(/class="candidate"/g) ?? []).length, 4);
  assert.match(svg, /cycles \(lower is better\)/);
});

test('the line falls as the kernel gets faster (y grows downward in SVG)', () => {
  const svg = scoreChartSvg(report());
  const ys = [...svg.matchAll(/class="best-point" cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
  assert.ok(ys[0] < ys[1] && ys[1] < ys[2], `y per iteration: ${ys.join(', ')}`);
});

test('a run without measurements says so instead of drawing axes', () => {
  const empty = { ...report(), iterations: [], candidates: [] };
  assert.match(scoreChartSvg(empty), /No measured candidates yet/);
});

test('text is escaped for XML', () => {
  assert.equal(escapeXml(`a<b>&"c'`), 'a&lt;b&gt;&amp;&quot;c&#39;');
});
