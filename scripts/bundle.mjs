#!/usr/bin/env node
// Bundles the three executables from tsc's output (dist/cli/*.js) into dist/bundle/, which bin/*
// run. Why: Node loads each ES module separately, and prx plus zod and yaml is ~450 modules; one
// bundle (with shared and lazily imported chunks split out) starts the proxy in ~190 ms instead
// of ~390 ms (scripts/startup-figures.mjs). pino is bundled: prx writes through pino.destination
// and never starts a worker-thread transport, the one part that needs pino's files on disk.
// Packages loaded only when a config uses them stay external: undici, the etcd and ZooKeeper
// clients, protobufjs and gRPC. The YAML parser is bundled on its own, as dist/bundle/yaml.cjs
// (see below).
//
//   node scripts/bundle.mjs        # after `tsc -p tsconfig.build.json` (npm run build runs both)
import { build } from 'esbuild';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist');
const OUT = join(DIST, 'bundle');
const ENTRIES = ['prx', 'prx-resolver', 'prxctl'];
const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
const EXTERNAL = ['undici', 'etcd3', 'node-zookeeper-client', 'protobufjs', '@grpc/*'];

const entryPoints = Object.fromEntries(ENTRIES.map((name) => [name, join(DIST, 'cli', `${name}.js`)]));
for (const file of Object.values(entryPoints)) {
  if (!existsSync(file)) {
    process.stderr.write(`bundle: ${file} is missing; run tsc -p tsconfig.build.json first\n`);
    process.exit(1);
  }
}

// zod re-exports its ~45 locale modules as `z.locales` (and `z.core.locales`), which a bundle
// cannot tree-shake out of a namespace. prx's config errors are English (zod's default, set by
// zod itself from locales/en.js), so only that one is bundled: 294 KB less source text kept in
// the heap, and less to compile at start-up.
const englishOnlyZodLocales = {
  name: 'english-only-zod-locales',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';\n",
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

// pino's worker-thread transports (`pino.transport()`, through thread-stream) are never started by
// prx, which writes through pino.destination; yet loading pino loads them, and with them Node's
// worker_threads and assert modules (1-2 MiB of RSS between them, most of it pages of node's own
// code that nothing else in the proxy runs). In the bundle, thread-stream is a class that says so
// if it is ever constructed, sonic-boom's single assert() is a two-line check, and pino's
// isMainThread (which only decides whether an asynchronous destination flushes at exit) is read
// without loading worker_threads: prx never runs in a worker thread. The admin's /admin/threads
// loads worker_threads itself, on first use.
const PINO_SHIMS = {
  'thread-stream':
    "module.exports = class ThreadStream { constructor() { throw new Error('prx does not start pino worker-thread transports (thread-stream is not bundled)'); } };\n",
  assert: "module.exports = function assert(value, message) { if (!value) throw new Error(message); };\n",
  worker_threads: 'module.exports = { isMainThread: true };\n',
};
const PINO_SHIM_IMPORTERS = {
  'thread-stream': /[\\/]node_modules[\\/]pino[\\/]lib[\\/]transport\.js$/,
  assert: /[\\/]node_modules[\\/]sonic-boom[\\/]index\.js$/,
  worker_threads: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]tools\.js$/,
};
const pinoWithoutWorkerThreads = {
  name: 'pino-without-worker-threads',
  setup(b) {
    b.onResolve({ filter: /^(thread-stream|assert|worker_threads)$/ }, (args) =>
      PINO_SHIM_IMPORTERS[args.path].test(args.importer) ? { path: args.path, namespace: 'prx-pino-shim' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'prx-pino-shim' }, (args) => ({ contents: PINO_SHIMS[args.path], loader: 'js' }));
  },
};

// The YAML parser is not in the bundle: it is a CommonJS file of its own that src/config/yaml-library.ts
// loads for each config read and unloads after (an ES module's code stays in the heap for good).
// The loader finds it by a path relative to the chunk the loader lands in, checked below.
const YAML_LIBRARY = join(OUT, 'yaml.cjs');
const YAML_FROM_CHUNK = '../yaml.cjs';
const YAML_LOADER_INPUT = 'dist/config/yaml-library.js';

// What every output for node shares. Whitespace and comments out: the source text stays in the heap
// for lazy compilation, and a single non-ASCII comment character doubles it (V8 then stores it two
// bytes per character). Names are kept, so stack traces still read.
const FOR_NODE = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'linked',
  logLevel: 'warning',
};

rmSync(OUT, { recursive: true, force: true });
await build({ ...FOR_NODE, entryPoints: { yaml: 'yaml' }, absWorkingDir: REPO, outfile: YAML_LIBRARY, format: 'cjs' });
const main = await build({
  ...FOR_NODE,
  plugins: [englishOnlyZodLocales, pinoWithoutWorkerThreads],
  entryPoints,
  outdir: OUT,
  splitting: true,
  format: 'esm',
  external: EXTERNAL,
  // `--version` and the usage report read the version bundled here, not package.json at run time.
  define: { PRX_BUILD_VERSION: JSON.stringify(version), PRX_YAML_LIBRARY: JSON.stringify(YAML_FROM_CHUNK) },
  // Bundled CommonJS packages (pino and its helpers) call require() for Node built-ins; ES modules have none.
  banner: { js: "import { createRequire as __prxCreateRequire } from 'node:module'; const require = __prxCreateRequire(import.meta.url);" },
  // tsc's maps are chained for `node --enable-source-maps`, which reports src/ positions.
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  metafile: true,
});
for (const [file, output] of Object.entries(main.metafile.outputs)) {
  if (!(YAML_LOADER_INPUT in output.inputs)) continue;
  const fromChunk = relative(dirname(resolve(file)), YAML_LIBRARY).split(sep).join('/');
  if (fromChunk !== YAML_FROM_CHUNK) {
    process.stderr.write(`bundle: ${YAML_LOADER_INPUT} landed in ${file}, from where the YAML library is ${fromChunk}, not ${YAML_FROM_CHUNK}\n`);
    process.exit(1);
  }
}

// The admin UI: one browser bundle per page (uPlot and the shared helpers split into chunks),
// every file named by its content hash so the admin can serve it as immutable, plus
// dist/ui/manifest.json naming each page's script and style sheets (read by src/admin/ui/assets.ts).
const UI_SRC = join(REPO, 'src', 'admin', 'ui', 'web');
const UI_OUT = join(DIST, 'ui');
const UI_PAGES = ['dashboard', 'delegator', 'logging', 'help', 'resolver'];
rmSync(UI_OUT, { recursive: true, force: true });
const ui = await build({
  entryPoints: Object.fromEntries(UI_PAGES.map((page) => [page, join(UI_SRC, `${page}.ts`)])),
  outdir: UI_OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox110', 'safari16'],
  minify: true,
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const pages = {};
for (const [file, output] of Object.entries(ui.metafile.outputs)) {
  const page = UI_PAGES.find((p) => output.entryPoint === relativeTo(join(UI_SRC, `${p}.ts`)));
  if (page === undefined || !file.endsWith('.js')) continue;
  pages[page] = { js: basename(file), css: output.cssBundle ? [basename(output.cssBundle)] : [] };
}
writeFileSync(join(UI_OUT, 'manifest.json'), `${JSON.stringify({ pages }, null, 2)}\n`);

function relativeTo(file) {
  return relative(process.cwd(), file).split(sep).join('/');
}
