import assert from 'node:assert/strict';
import { test } from 'node:test';
import { noKernelMessage, optimizeOffers, sameUri, selectRuns } from '../src/pick';
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

const optimize = (title: string, kernel: string, quick?: boolean) => ({
  title,
  command: 'speedpatch.optimize',
  arguments: [{ uri: here, kernel, ...(quick ? { quick } : {}) }],
});

test('optimize offers come from the server optimize commands only, the full search first', () => {
  const offers = optimizeOffers([
    optimize('Optimize matmul (gemmini-native)', 'matmul'),
    optimize('Optimize matmul (quick)', 'matmul', true),
    { title: 'Show diff', command: 'speedpatch.showDiff', arguments: [{ runId: 'r1' }] },
    undefined,
  ]);
  assert.deepEqual(offers.map((o) => o.title), ['Optimize matmul (gemmini-native)']);
});

test('the quick variant is offered when it is the only one', () => {
  assert.deepEqual(optimizeOffers([optimize('Optimize matmul (quick)', 'matmul', true)]).map((o) => o.args.quick), [true]);
});

test('a kernel seen twice (code lens and code action) is offered once', () => {
  const twice = optimize('Optimize conv (gemmini-native)', 'conv');
  assert.equal(optimizeOffers([twice, twice]).length, 1);
});

test('a plain-text lens (empty command) is not an offer', () => {
  assert.deepEqual(optimizeOffers([{ title: 'searching 1/2', command: '' }]), []);
});

test('when there is nothing to optimize, the server\'s reason is the message', () => {
  assert.equal(
    noKernelMessage(['speedpatch: line 8: invalid syntax (kernel_sum cannot be optimized until it does)'], 'sum.py'),
    'speedpatch: line 8: invalid syntax (kernel_sum cannot be optimized until it does)',
  );
  assert.equal(noKernelMessage([], 'sum.py'), 'speedpatch: no kernel to optimize in sum.py (none found, or its search is already running).');
});
