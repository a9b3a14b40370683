// ESLint for the extension's TypeScript (npm run lint; scripts/test.sh runs it, so CI fails on a finding).
// typescript-eslint's type-checked rules: they read the types (tsconfig.json through the project service), so
// they catch promises nobody awaits and `any` leaking out of the vscode/languageclient APIs.
// typescript-eslint needs TypeScript's JavaScript API, which TypeScript 7 does not ship: package.json installs
// TypeScript 6 (Microsoft's @typescript/typescript6) as `typescript` for it, and TypeScript 7 as
// `typescript-7`, which `npm run check` type-checks with.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'out/', 'node_modules/', 'python/'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  {
    // node:test runs every test() it is given and reports its outcome; the promise test() returns is only for
    // callers that want to wait for that one test, so the tests do not await it.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
);
