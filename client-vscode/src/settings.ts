// Maps the extension's VS Code settings onto the settings object the server reads from
// initializationOptions and workspace/didChangeConfiguration. Unset values are left out so the server
// falls back to the workspace's speedpatch.toml for them.

export interface ServerSettings {
  llm?: { baseUrl?: string; models?: string[]; apiKey?: string };
  budget?: { maxLlmCalls?: number; maxEvaluations?: number; maxSeconds?: number };
  search?: { iterations?: number; beam?: number; plans?: number; codes?: number };
  backends?: Record<string, string>; // target name -> backend name
  offline?: boolean;
}

/** Reads one setting below the "speedpatch." section, e.g. read("search.beam"); read("backends") gives the
 * object of every speedpatch.backends.<target> setting (VS Code groups dotted keys), whatever the targets are. */
export type SettingReader = (key: string) => unknown;

const NUMBER_KEYS: Record<'budget' | 'search', string[]> = {
  budget: ['maxLlmCalls', 'maxEvaluations', 'maxSeconds'],
  search: ['iterations', 'beam', 'plans', 'codes'],
};

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

function compact<T extends object>(record: T): T | undefined {
  const kept = Object.entries(record).filter(([, v]) => v !== undefined);
  return kept.length > 0 ? (Object.fromEntries(kept) as T) : undefined;
}

/** The backends chosen per target; which targets there are is the server's business (speedpatch/targets). */
function backendChoices(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return undefined;
  }
  const chosen: Record<string, string> = {};
  for (const [target, backend] of Object.entries(value)) {
    const name = text(backend);
    if (name !== undefined) {
      chosen[target] = name;
    }
  }
  return compact(chosen);
}

export function serverSettings(read: SettingReader, apiKey?: string): ServerSettings {
  const models = read('llm.models');
  const modelList = Array.isArray(models) ? models.map(text).filter((m): m is string => m !== undefined) : [];
  const settings: ServerSettings = {
    llm: compact({
      baseUrl: text(read('llm.baseUrl')),
      models: modelList.length > 0 ? modelList : undefined,
      apiKey: text(apiKey),
    }),
    budget: compact(Object.fromEntries(NUMBER_KEYS.budget.map((k) => [k, positiveNumber(read(`budget.${k}`))]))),
    search: compact(Object.fromEntries(NUMBER_KEYS.search.map((k) => [k, positiveNumber(read(`search.${k}`))]))),
    backends: backendChoices(read('backends')),
    offline: typeof read('offline') === 'boolean' ? (read('offline') as boolean) : undefined,
  };
  return compact(settings) ?? {};
}

/** The settings with the API key masked, for logging what was sent. */
export function redacted(settings: ServerSettings): ServerSettings {
  if (settings.llm?.apiKey === undefined) {
    return settings;
  }
  return { ...settings, llm: { ...settings.llm, apiKey: '<set>' } };
}
