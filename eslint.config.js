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
      // Leaving keys out of an object by destructuring the rest names them without using them.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
  {
    // The root configuration files are CommonJS (package.json has no "type": "module"): `require` is how they load
    // their plugins, and `module.exports` how they answer.
    files: ['*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
