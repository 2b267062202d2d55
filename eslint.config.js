// Lint: type-aware rules for promise safety plus the layering rule: each layer imports only
// from layers below it (see README "Architecture").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Bottom to top. A file in layer i may import from layers 0..i (and its own layer).
const layers = [
  ['core'],
  ['naming'],
  ['config'],
  ['service'],
  ['protocol'],
  ['namer', 'interpreter', 'telemetry'],
  ['router'],
  ['admin', 'resolver'],
  ['cli'],
];
const layerOf = (dir) => layers.findIndex((l) => l.includes(dir));
const layerRules = layers.flatMap((dirs, i) =>
  dirs.map((dir) => {
    const above = layers.slice(i + 1).flat();
    const siblings = dirs.filter((d) => d !== dir);
    const banned = [...above, ...siblings].filter((d) => layerOf(d) >= i);
    return {
      files: [`src/${dir}/**/*.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: banned.map((d) => ({
              group: [`**/${d}/*`, `**/${d}/**`, `../${d}`, `../../${d}`],
              message: `layer '${dir}' must not import from '${d}' (imports go downward only)`,
            })),
          },
        ],
      },
    };
  }),
);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench-results/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['test/**/*.ts', 'scripts/**/*.ts'], rules: { 'no-console': 'off', '@typescript-eslint/no-floating-promises': 'off' } },
  { files: ['src/cli/**/*.ts'], rules: { 'no-console': 'off' } },
  ...layerRules,
);
