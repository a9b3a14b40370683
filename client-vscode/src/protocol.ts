// Shapes of the speedpatch language server's custom messages (see LSP protocol notes in the repo).
// Only types: the extension and its pure helpers share them without importing vscode.

export interface Measure {
  value: number | null;
  unit: string;
}

/** The server's one verdict on a run or candidate (speedpatch.verdict): the same words in every client. */
export interface Verdict {
  kind: string; // faster | no_difference | not_faster | unmeasured
  speedup: number | null;
  text: string; // "1.24x faster", "no measurable difference (1.01x, noise ±2.0%)", "no faster version found"
  detail: string; // "24,119 -> 19,484 cycles"
  source: string; // hardware | model | emulator | simulator | compile-only
  source_label: string; // "cycle model"
  flags: string[]; // "over 10x: review it before trusting it"
  how: [string, string][]; // "How it was measured": [label, value] rows of the winner's receipt
}

/** One reason candidates failed, with how many and the first one's message. */
export interface FailureKind {
  status: string; // compile_error | incorrect | runtime_error | timeout | rejected | infra_error
  label: string; // "did not compile", "incorrect", "crashed", "timed out", "rejected", "could not be run"
  meaning: string; // what that status means, for the report
  count: number;
  example: string;
}

/** The candidates of a run that failed, by why (the baseline is not a candidate). */
export interface Failures {
  evaluated: number;
  failed: number;
  text: string; // "3 of 12 candidates failed: 2 incorrect, 1 rejected"; "" when none failed
  byStatus: FailureKind[];
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
  /** The kernel or its file changed since the run (the server's extra field). */
  stale?: boolean;
  /** Absent from servers before the shared verdict. */
  verdict?: Verdict;
  /** Where candidates are evaluated: "local" or "ray"; absent from servers before the Ray executor. */
  executor?: string;
  /** Failed candidates so far (live searches only; a stored run's are in its report). */
  failures?: Failures;
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
  verdict?: Verdict;
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
  /** The evaluation's one-line message: why it failed (absent from older servers). */
  message?: string;
}

export interface RunReport {
  run: RunSummary;
  iterations: ReportIteration[];
  candidates: ReportCandidate[];
  /** Absent from older servers. */
  failures?: Failures;
}

/** One backend of a target, checked under the configuration of the folder asked about. */
export interface BackendInfo {
  name: string;
  description: string;
  measuredOn: string; // hardware | model | emulator | simulator | compile-only
  measuresSpeed: boolean;
  usable: boolean; // whether a search can run on it here
  reason: string; // why not, and what to do about it; or a short description when usable
}

/** A target the server has: which files are its, and its backends. */
export interface TargetInfo {
  name: string;
  title: string;
  languages: string[]; // LSP languageIds
  extensions: string[]; // ".c", ".cu", ...
  fenceLanguage: string;
  defaultBackend: string;
  backend: string; // the one the folder's settings choose
  backends: BackendInfo[];
}

export interface TargetsResponse {
  targets: TargetInfo[];
  notLoaded: Record<string, string>; // built-in target -> why it could not be loaded here
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
/** The server asks the editor to show a run's report ({runId}), e.g. from the end-of-search message. */
export const OPEN_REPORT = 'speedpatch/openReport';
export const CANDIDATE = 'speedpatch/candidate';
export const RUNS = 'speedpatch/runs';
export const RUN_REPORT = 'speedpatch/runReport';
/** {uri?} -> TargetsResponse: the targets and backends this server has. */
export const TARGETS = 'speedpatch/targets';
