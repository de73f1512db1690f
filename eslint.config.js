// ESLint: typescript-eslint's type-aware rules over src/, test/ and bench/ (through tsconfig.eslint.json, which adds
// test/ to the compiled folders), and ESLint's recommended rules over the launcher and the .mjs helpers.
// Layout and line length are Prettier's; `npm run lint` runs both, with zero warnings allowed.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The Node.js globals the launcher and the .mjs helpers use (the `globals` package is not a dependency of ours).
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'Buffer',
    'URL',
    'navigator',
  ].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test/fixtures/**', 'coverage/**'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'vitest.config.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // A daemon whose correctness rests on awaited cleanup: every promise is awaited, returned, or voided with a
      // comment saying why nothing waits for it.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    files: ['bin/wine-recon-sync', '**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: nodeGlobals },
  },
);
