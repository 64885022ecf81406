// ESLint: typescript-eslint's recommended rules, and lines of at most 120 characters (Prettier wraps code at 120 but
// leaves comments and strings as written).
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const stylistic = require('@stylistic/eslint-plugin');

module.exports = tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test-results/', '.bench-data/', 'scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/max-len': ['error', { code: 120, ignoreUrls: false }],
    },
  },
);
