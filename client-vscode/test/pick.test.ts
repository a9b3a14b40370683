import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sameUri, selectRuns } from '../src/pick';
import { summary } from './fixtures';

const here = 'file:///work/demo/matmul.c';
const runs = [
  summary({ runId: 'old-here', uri: here, created: '2026-11-30T01:00:00Z' }),
  summary({ runId: 'new-elsewhere', uri: 'file:///work/demo/conv.c', created: '2026-11-30T03:00:00Z' }),
  summary({ runId: 'new-here', uri: here, created: '2026-11-30T02:00:00Z', status: 'running', speedup: null, bestValue: null }),
];

test('runs of the active file come first, newest first', () => {
  assert.deepEqual(
    selectRuns(runs, { uri: here }).map((r) => r.runId),
    ['new-here', 'old-here', 'new-elsewhere'],
  );
});

test('status filter keeps only runs in those states', () => {
  assert.deepEqual(selectRuns(runs, { statuses: ['running'] }).map((r) => r.runId), ['new-here']);
});

test('withWinner keeps only runs that have a measured best candidate', () => {
  assert.ok(!selectRuns(runs, { withWinner: true }).some((r) => r.runId === 'new-here'));
});

test('URIs that differ only in percent-encoding are the same file', () => {
  assert.ok(sameUri('file:///c%3A/x/a.c', 'file:///c:/x/a.c'));
  assert.ok(!sameUri('file:///x/a.c', 'file:///x/b.c'));
});
