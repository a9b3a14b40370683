import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TargetsResponse } from '../src/protocol';
import { describeTargets, documentLanguages } from '../src/targets';

test('the documents served are the manifest onLanguage activation languages, each once', () => {
  const events = ['onLanguage:c', 'onLanguage:python', 'workspaceContains:speedpatch.toml', 'onLanguage:c', 7];
  assert.deepEqual(documentLanguages(events), ['c', 'python']);
});

test('a manifest without activation events serves no documents', () => {
  assert.deepEqual(documentLanguages(undefined), []);
});

const ANSWER: TargetsResponse = {
  targets: [
    {
      name: 'cuda',
      title: 'CUDA',
      languages: ['cuda-cpp'],
      extensions: ['.cu'],
      fenceLanguage: 'cuda',
      defaultBackend: 'cuda-compile',
      backend: 'cuda-compile',
      backends: [
        {
          name: 'cuda-compile',
          description: 'compile-only',
          measuredOn: 'compile-only',
          measuresSpeed: false,
          usable: false,
          reason: 'cuda-compile only compiles/checks, it cannot time candidates',
        },
        { name: 'cuda-local', description: 'nvcc', measuredOn: 'hardware', measuresSpeed: true, usable: true, reason: '' },
      ],
    },
  ],
  notLoaded: { nki: 'No module named numpy' },
};

test('the log says each target, its backend and why that backend cannot run here', () => {
  assert.deepEqual(describeTargets(ANSWER), [
    'target CUDA (.cu, language cuda-cpp): backend cuda-compile (not usable: cuda-compile only compiles/checks, ' +
      'it cannot time candidates); backends: cuda-compile, cuda-local',
    'target nki could not be loaded: No module named numpy',
  ]);
});
