// The one lint gate for TypeScript and JavaScript (`npm run lint`, part of `npm test` and CI):
// ESLint with typescript-eslint's recommended rules; formatting is Prettier's alone
// (eslint-config-prettier turns off every rule that would disagree with it).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'out/**',
      'node_modules/**',
      '.chorus-cache/**',
      'coverage/**',
      'test-results/**',
      'training/**',
      'bench/data/**',
      'test/fixtures/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `_`-prefixed names are deliberately unused (callback signatures, destructuring).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Control characters are the point of the ANSI and Verilator-coverage parsers.
      'no-control-regex': 'off',
    },
  },
  {
    // One idea per function, one subject per file (issue 41): a function past 120 lines or a file
    // past 700, blank lines and comments not counted, is split by what it does.
    files: ['src/**/*.ts', 'webview/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true, IIFEs: true }],
      'max-lines': ['error', { max: 700, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Tests read HTTP and CLI JSON loosely and let the assertions check its shape.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['webview/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
  },
  prettier,
);
