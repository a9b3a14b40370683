import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { redacted, serverSettings, SettingSpec } from '../src/settings';

// the extension's real manifest (generated from server/lsp/settings_schema.py); out/test/ -> client-vscode/
const MANIFEST = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, SettingSpec> } };
};
const SPECS = MANIFEST.contributes.configuration.properties;

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

test('unset settings are left out so the server falls back to speedpatch.toml', () => {
  const unset = { 'llm.baseUrl': '', 'llm.models': [], 'search.beam': null, offline: null, pythonPath: '' };
  assert.deepEqual(serverSettings(reader(unset), SPECS), {});
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
    SPECS,
  );
  assert.deepEqual(settings, {
    llm: { baseUrl: 'http://127.0.0.1:8000/v1', models: ['m1', 'm2'] },
    budget: { maxLlmCalls: 20, maxSeconds: 90 },
    search: { iterations: 2, beam: 3 },
    backends: { gemmini: 'gemmini-native' },
    offline: true,
  });
});

test('every server setting of the manifest is sent when set, the interpreter path never', () => {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SPECS)) {
    const types = ([] as unknown[]).concat(spec.type);
    const key = name.slice('speedpatch.'.length);
    values[key] = types.includes('boolean') ? true : types.includes('array') ? ['x'] : types.includes('string') ? 'x' : 7;
  }
  values.backends = { gemmini: 'x', nki: 'x', cuda: 'x' };
  const sent = JSON.stringify(serverSettings(reader(values), SPECS));
  for (const name of Object.keys(SPECS).filter((n) => n !== 'speedpatch.pythonPath')) {
    const parts = name.split('.');
    assert.ok(sent.includes(`"${parts[parts.length - 1]}":`), `${name} is not sent: ${sent}`);
  }
  assert.ok(!sent.includes('pythonPath'));
});

test('offline=false is passed on, not dropped', () => {
  assert.deepEqual(serverSettings(reader({ offline: false }), SPECS), { offline: false });
});

test('search values below the manifest minimum or not numbers are ignored', () => {
  assert.deepEqual(serverSettings(reader({ 'search.beam': 0, 'search.plans': -1, 'search.codes': 'x' }), SPECS), {});
});

test('a backend chosen for any target is passed on, unset ones are left out', () => {
  const settings = serverSettings(reader({ backends: { toy: ' toy-count ', nki: '', cuda: null } }), SPECS);
  assert.deepEqual(settings, { backends: { toy: 'toy-count' } });
});

test('a backends setting that is not an object is ignored', () => {
  assert.deepEqual(serverSettings(reader({ backends: 'cuda-local' }), SPECS), {});
});

test('the API key goes into llm.apiKey and is masked when logged', () => {
  const settings = serverSettings(reader({}), SPECS, 'sk-secret');
  assert.equal(settings.llm?.apiKey, 'sk-secret');
  assert.ok(!JSON.stringify(redacted(settings)).includes('sk-secret'));
  assert.equal(settings.llm?.apiKey, 'sk-secret', 'redacting does not change the original');
});

test('a key written into the base URL is masked in what is logged', () => {
  const settings = { llm: { baseUrl: 'https://user:sk-canary-in-url-42@llm.example/v1', models: ['m'] } };
  const logged = JSON.stringify(redacted(settings));
  assert.ok(!logged.includes('sk-canary-in-url-42'), logged);
  assert.ok(logged.includes('llm.example/v1'));
  assert.equal(settings.llm.baseUrl, 'https://user:sk-canary-in-url-42@llm.example/v1');  // what is sent is unchanged
});
