import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bestSpeedup,
  formatSpeedup,
  formatValue,
  mergeRuns,
  runContext,
  runDescription,
  runLabel,
  progressMessage,
  progressPercent,
  runTooltip,
  startedText,
  statusBarView,
  statusText,
} from '../src/format';
import { summary } from './fixtures';

test('speedups show two decimals and an x; unknown shows a dash', () => {
  assert.equal(formatSpeedup(2.345), '2.35x');
  assert.equal(formatSpeedup(null), '–');
  assert.equal(formatSpeedup(Number.NaN), '–');
});

test('values carry their unit', () => {
  assert.equal(formatValue(12345, 'cycles'), '12,345 cycles');
  assert.equal(formatValue(0.123456, 'ms'), '0.1235 ms');
  assert.equal(formatValue(null, 'ms'), '–');
});

test('values read as the server writes them: microseconds as µs, a fractional value over 1,000 whole', () => {
  assert.equal(formatValue(12.5, 'us'), '12.5 µs');
  assert.equal(formatValue(12345.6, 'us'), '12,346 µs');
});

test('status bar counts running searches and shows the best speedup of the active file', () => {
  const view = statusBarView(
    [
      summary({ runId: 'a', status: 'running', iteration: 1, iterations: 3, speedup: 1.2, uri: 'file:///work/demo/conv.c' }),
      summary({ runId: 'b', status: 'finished', speedup: 3.1 }),
    ],
    'file:///work/demo/matmul.c',
  );
  assert.equal(view.text, '$(rocket) speedpatch: $(sync~spin) 1 running, best 3.10x');
  assert.match(view.tooltip, /matmul \(conv\.c\): iteration 1\/3, best 1\.20x/);
});

test('status bar without runs is just the name', () => {
  assert.equal(statusBarView([]).text, '$(rocket) speedpatch');
});

test('runs without a winner do not count toward the best speedup', () => {
  assert.equal(bestSpeedup([summary({ speedup: null })]), null);
});

test('a run update replaces the older summary of the same run, newest run first', () => {
  const old = summary({ runId: 'a', created: '2026-11-30T01:00:00Z', status: 'running' });
  const other = summary({ runId: 'b', created: '2026-11-30T02:00:00Z' });
  const merged = mergeRuns([old, other], { ...old, status: 'finished' });
  assert.deepEqual(
    merged.map((r) => [r.runId, r.status]),
    [
      ['b', 'finished'],
      ['a', 'finished'],
    ],
  );
});

test('run description shows progress, speedup, correctness and backend', () => {
  assert.equal(
    runDescription(summary({ status: 'running', iteration: 1, iterations: 4, speedup: 1.5 })),
    'iteration 1/4 · 1.50x · 7/9 correct · gemmini-native',
  );
  assert.equal(runDescription(summary()), 'finished · 2.50x · 7/9 correct · gemmini-native');
});

test('in a multi-root workspace a run is described with its workspace folder', () => {
  const run = summary({ folder: 'kernels-b', folderUri: 'file:///work/kernels-b' });
  assert.match(runDescription(run, true), / · kernels-b$/);
  assert.doesNotMatch(runDescription(run), /kernels-b/); // one folder: no label
  assert.equal(runDescription(summary(), true), runDescription(summary())); // an older server sends none
  assert.match(runTooltip(run), /^folder: kernels-b$/m);
});

test('a run evaluated on the Ray cluster says so in its row and tooltip', () => {
  const run = summary({ executor: 'ray' });
  assert.equal(runDescription(run), 'finished · 2.50x · 7/9 correct · gemmini-native on ray');
  assert.match(runTooltip(run), /evaluated on: the Ray cluster/);
  assert.match(runTooltip(summary()), /evaluated on: this machine/);
});

test('the status bar best is the active file\'s, not the best of every file', () => {
  const runs = [
    summary({ runId: 'a', uri: 'file:///work/demo/matmul.c', speedup: 1.3 }),
    summary({ runId: 'b', uri: 'file:///work/demo/conv.c', speedup: 3.1 }),
  ];
  assert.equal(statusBarView(runs, 'file:///work/demo/matmul.c').text, '$(rocket) speedpatch: best 1.30x');
  assert.equal(statusBarView(runs, 'file:///work/demo/other.c').text, '$(rocket) speedpatch');
  assert.equal(statusBarView(runs).text, '$(rocket) speedpatch'); // no editor open
  assert.match(statusBarView(runs, 'file:///work/demo/matmul.c').tooltip, /for matmul\.c: 1\.30x/);
});

test('a Runs view row names the kernel, its file and its speedup', () => {
  assert.equal(runLabel(summary({ uri: 'file:///work/demo/my%20kernel.c' })), 'matmul · my kernel.c · 2.50x');
});

test('a status whose message only repeats it is said once', () => {
  assert.equal(statusText(summary({ status: 'cancelled', message: 'cancelled' })), 'cancelled');
  assert.equal(statusText(summary({ status: 'cancelled', message: '' })), 'cancelled');
  assert.equal(statusText(summary({ status: 'failed', message: 'gcc: boom' })), 'failed — gcc: boom');
});

test('run start times read as minutes or hours ago, then as a date', () => {
  const now = new Date('2026-11-30T12:00:00Z');
  assert.equal(startedText('2026-11-30T11:59:30Z', now), 'just now');
  assert.equal(startedText('2026-11-30T11:45:00Z', now), '15 min ago');
  assert.equal(startedText('2026-11-30T09:00:00Z', now), '3 h ago');
  assert.match(startedText('2026-11-20T09:05:00Z', now), /^2026-11-20 \d\d:05$/);
});

test('inline actions fit the run: Show diff and Apply for a fresh winner, Cancel while running', () => {
  assert.equal(runContext(summary()), 'run winner');
  assert.equal(runContext(summary({ stale: true })), 'run');
  assert.equal(runContext(summary({ status: 'running', speedup: null })), 'run running');
  assert.equal(runContext(summary({ speedup: 1.0 })), 'run');
});

test('a live run\'s tooltip says how many candidates failed and why', () => {
  const failures = { evaluated: 12, failed: 3, text: '3 of 12 candidates failed: 2 incorrect, 1 rejected', byStatus: [] };
  assert.match(runTooltip(summary({ failures })), /^3 of 12 candidates failed: 2 incorrect, 1 rejected$/m);
  assert.ok(!runTooltip(summary()).includes('failed'));
});

test('the progress notification says where the search is, its best, its failures and how long it has run', () => {
  const failures = { evaluated: 12, failed: 3, text: '', byStatus: [] };
  const running = summary({ status: 'running', iteration: 1, iterations: 2, speedup: 1.24, failures });
  assert.equal(progressMessage(running, 12.7), 'iteration 1 of 2, best 1.24x, 3 of 12 candidates failed, 12 s so far');
  assert.equal(progressMessage(summary({ status: 'running', iteration: 0, speedup: null }), 65), 'measuring the original, 1 min 05 s so far');
  assert.equal(progressMessage(summary({ status: 'queued' }), 3), 'queued behind another search, 3 s so far');
  assert.equal(progressPercent(summary({ iteration: 2, iterations: 4 })), 25);
  assert.equal(progressPercent(summary({ iteration: 0, iterations: 0 })), 0);
});
