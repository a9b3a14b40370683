import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RestartPolicy } from '../src/restartPolicy';

test('a crash now and then is restarted', () => {
  const policy = new RestartPolicy(2, 1000);
  assert.equal(policy.shouldRestart(0), true);
  assert.equal(policy.shouldRestart(5000), true);
  assert.equal(policy.shouldRestart(10000), true);
});

test('too many crashes within the window stop the restarts', () => {
  const policy = new RestartPolicy(2, 1000);
  assert.equal(policy.shouldRestart(0), true);
  assert.equal(policy.shouldRestart(100), true);
  assert.equal(policy.shouldRestart(200), false);
});

test('a manual restart clears the crash history', () => {
  const policy = new RestartPolicy(1, 1000);
  policy.shouldRestart(0);
  policy.reset();
  assert.equal(policy.shouldRestart(10), true);
});
