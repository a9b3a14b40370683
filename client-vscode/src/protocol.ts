// Shapes of the speedpatch language server's custom messages (see LSP protocol notes in the repo).
// Only types: the extension and its pure helpers share them without importing vscode.

export interface Measure {
  value: number | null;
  unit: string;
}

export interface RunSummary {
  runId: string;
  uri: string;
  kernel: string;
  target: string;
  backend: string;
  status: string; // running | finished | cancelled | failed | interrupted
  iteration: number;
  iterations: number;
  speedup: number | null;
  bestValue: number | null;
  baselineValue: number | null;
  unit: string;
  evaluations: { total: number; correct: number };
  created: string;
  message: string;
  /** The workspace folder the run belongs to (name and uri); absent from servers before multi-root. */
  folder?: string;
  folderUri?: string;
}

export interface LineageStep {
  id: string;
  iteration: number;
  plan: string;
  value: number | null;
  unit: string;
}

export interface CandidateResponse {
  runId: string;
  candidateId: string;
  uri: string;
  kernel: string;
  originalText: string;
  newText: string;
  speedup: number | null;
  baseline: Measure;
  best: Measure;
  backend: string;
  receipt: Record<string, unknown>;
  lineage: LineageStep[];
  title: string;
}

export interface ReportIteration {
  iteration: number;
  best: number | null;
  beam: string[];
}

export interface ReportCandidate {
  id: string;
  parentId: string | null;
  iteration: number;
  plan: string;
  status: string;
  value: number | null;
  unit: string;
  model: string;
}

export interface RunReport {
  run: RunSummary;
  iterations: ReportIteration[];
  candidates: ReportCandidate[];
}

export interface OpenDiffParams {
  runId: string;
  candidateId: string;
  title: string;
}

export const RUN_UPDATE = 'speedpatch/runUpdate';
/** The list of runs changed beyond one run (a workspace folder was added or removed): fetch it again. */
export const RUNS_CHANGED = 'speedpatch/runsChanged';
export const OPEN_DIFF = 'speedpatch/openDiff';
export const CANDIDATE = 'speedpatch/candidate';
export const RUNS = 'speedpatch/runs';
export const RUN_REPORT = 'speedpatch/runReport';
