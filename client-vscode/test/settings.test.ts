import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redacted, serverSettings } from '../src/settings';

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

test('unset settings are left out so the server falls back to speedpatch.toml', () => {
  assert.deepEqual(serverSettings(reader({ 'llm.baseUrl': '', 'llm.models': [], 'search.beam': null, offline: null })), {});
});

test('settings map onto the protocol object grouped by section', () => {
  const settings = serverSettings(
    reader({
      'llm.baseUrl': ' http://127.0.0.1:8000/v1 ',
      'llm.models': ['m1', '', 'm2'],
      'budget.maxLlmCalls': 20,
      'budget.maxSeconds': 90,
      'search.iterations': 2,
      'search.beam': 3,
      backends: { gemmini: 'gemmini-native', cuda: '' },
      offline: true,
    }),
  );
  assert.deepEqual(settings, {
    llm: { baseUrl: 'http://127.0.0.1:8000/v1', models: ['m1', 'm2'] },
    budget: { maxLlmCalls: 20, maxSeconds: 90 },
    search: { iterations: 2, beam: 3 },
    backends: { gemmini: 'gemmini-native' },
    offline: true,
  });
});

test('offline=false is passed on, not dropped', () => {
  assert.deepEqual(serverSettings(reader({ offline: false })), { offline: false });
});

test('non-positive or non-numeric search values are ignored', () => {
  assert.deepEqual(serverSettings(reader({ 'search.beam': 0, 'search.plans': -1, 'search.codes': 'x' })), {});
});

test('the API key goes into llm.apiKey and is masked when logged', () => {
  const settings = serverSettings(reader({}), 'sk-secret');
  assert.equal(settings.llm?.apiKey, 'sk-secret');
  assert.ok(!JSON.stringify(redacted(settings)).includes('sk-secret'));
  assert.equal(settings.llm?.apiKey, 'sk-secret', 'redacting does not change the original');
});

test('a backend chosen for any target is passed on, unset ones are left out', () => {
  const settings = serverSettings(reader({ backends: { toy: ' toy-count ', nki: '', cuda: null } }));
  assert.deepEqual(settings, { backends: { toy: 'toy-count' } });
});

test('a backends setting that is not an object is ignored', () => {
  assert.deepEqual(serverSettings(reader({ backends: 'cuda-local' })), {});
});
