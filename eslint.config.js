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
const banLayer = (dir, d) => ({
  group: [`**/${d}/*`, `**/${d}/**`, `../${d}`, `../../${d}`],
  message: `layer '${dir}' must not import from '${d}' (imports go downward only)`,
});
const layerBans = (dir) => {
  const i = layerOf(dir);
  const above = layers.slice(i + 1).flat();
  const siblings = layers[i].filter((d) => d !== dir);
  return [...above, ...siblings].filter((d) => layerOf(d) >= i).map((d) => banLayer(dir, d));
};
const restrict = (files, patterns) => ({ files, rules: { 'no-restricted-imports': ['error', { patterns }] } });

// The protocols: each has its codecs in protocol/<p> and its router adapter in router/<p>. Routers
// share only router/core; protocols share nothing, except that h2 may use HTTP's semantics.
const protocols = ['http', 'h2', 'thrift', 'thriftmux', 'mux'];
const mayUse = { h2: ['http'], thriftmux: ['mux', 'thrift'] };
const banRouter = (from, p) => ({ group: [`**/router/${p}/**`, `../${p}/**`, `../../${p}/**`], message: `${from} must not import router/${p} (routers share only router/core)` });
const banProtocol = (from, p) => ({ group: [`**/protocol/${p}/**`, `../${p}/**`, `../../${p}/**`], message: `${from} must not import protocol/${p}` });

const layerRules = layers.flat().map((dir) => restrict([`src/${dir}/**/*.ts`], layerBans(dir)));
// Later entries win for the files they match, so each repeats its layer's bans.
const protocolRules = [
  restrict(['src/router/core/**/*.ts'], [
    ...layerBans('router'),
    { group: ['**/protocol/**', '../../protocol/**'], message: 'router/core is protocol-free: it must not import protocol/*' },
    ...protocols.map((p) => banRouter('router/core', p)),
  ]),
  ...protocols.map((p) =>
    restrict([`src/router/${p}/**/*.ts`], [...layerBans('router'), ...protocols.filter((q) => q !== p).map((q) => banRouter(`router/${p}`, q))]),
  ),
  ...protocols.map((p) =>
    restrict(
      [`src/protocol/${p}/**/*.ts`],
      [...layerBans('protocol'), ...protocols.filter((q) => q !== p && !(mayUse[p] ?? []).includes(q)).map((q) => banProtocol(`protocol/${p}`, q))],
    ),
  ),
];

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
  ...protocolRules,
);
