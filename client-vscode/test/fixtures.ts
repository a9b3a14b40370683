// Small, realistic server answers shared by the unit tests.
import type { ReportCandidate, RunReport, RunSummary } from '../src/protocol';

export function summary(overrides: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: 'r1',
    uri: 'file:///work/demo/matmul.c',
    kernel: 'matmul',
    target: 'gemmini',
    backend: 'gemmini-native',
    status: 'finished',
    iteration: 2,
    iterations: 2,
    speedup: 2.5,
    bestValue: 400,
    baselineValue: 1000,
    unit: 'cycles',
    evaluations: { total: 9, correct: 7 },
    created: '2026-11-30T03:00:00Z',
    message: '',
    ...overrides,
  };
}

export function candidate(overrides: Partial<ReportCandidate> & { id: string }): ReportCandidate {
  return { parentId: null, iteration: 0, plan: '', status: 'ok', value: 1000, unit: 'cycles', model: 'offline', ...overrides };
}

export function report(): RunReport {
  return {
    run: summary(),
    iterations: [
      { iteration: 0, best: 1000, beam: ['c0'] },
      { iteration: 1, best: 600, beam: ['c1', 'c2'] },
      { iteration: 2, best: 400, beam: ['c3'] },
    ],
    candidates: [
      candidate({ id: 'c0' }),
      candidate({ id: 'c1', parentId: 'c0', iteration: 1, plan: 'Retile to 16x16 tiles\nkeeps the scratchpad full', value: 600 }),
      candidate({ id: 'c2', parentId: 'c0', iteration: 1, plan: 'Unroll the k loop', value: 800 }),
      candidate({ id: 'bad', parentId: 'c0', iteration: 1, plan: 'Skip <the> bias', status: 'incorrect', value: 100 }),
      candidate({ id: 'c3', parentId: 'c1', iteration: 2, plan: 'Double-buffer loads', value: 400 }),
    ],
  };
}
