// What the extension knows of speedpatch's targets comes from elsewhere, never from a list here: the
// documents it hands the server are the languages of its manifest's onLanguage activation events (generated
// from the targets' language ids by `python -m speedpatch.lsp.settings_schema`), and which targets and
// backends exist, and which can run here, is the server's answer to speedpatch/targets.
import { TargetsResponse } from './protocol';

/** The languageIds in a manifest's activationEvents ("onLanguage:c" -> "c"), each once. */
export function documentLanguages(activationEvents: unknown): string[] {
  if (!Array.isArray(activationEvents)) {
    return [];
  }
  const languages = activationEvents
    .filter((event): event is string => typeof event === 'string' && event.startsWith('onLanguage:'))
    .map((event) => event.slice('onLanguage:'.length));
  return [...new Set(languages)];
}

/** One line per target for the log: its files, the backend its folder uses, and what cannot run here. */
export function describeTargets(answer: TargetsResponse): string[] {
  const lines = answer.targets.map((target) => {
    const files = [...target.extensions, ...target.languages.map((l) => `language ${l}`)].join(', ');
    const chosen = target.backends.find((b) => b.name === target.backend);
    const state = chosen === undefined ? 'not one of its backends' : chosen.usable ? 'usable' : `not usable: ${chosen.reason}`;
    return `target ${target.title} (${files}): backend ${target.backend} (${state}); backends: ${target.backends
      .map((b) => b.name)
      .join(', ')}`;
  });
  const missing = Object.entries(answer.notLoaded).map(([name, why]) => `target ${name} could not be loaded: ${why}`);
  return [...lines, ...missing];
}
