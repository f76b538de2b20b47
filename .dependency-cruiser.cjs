/**
 * The layering rule, checked by dependency-cruiser before the unit tests (scripts/test.mjs; `npm run check:layers`).
 * Imports point down only:
 *
 *   ui (src/ui, src/main.tsx)  │  tools (src/eval, src/bench, src/cli, src/node)
 *   worker transport (src/worker)
 *   api (src/api)
 *   pipeline: kvsplit → kvcompile → kvstore → kvlink → generate, and analysis (attention arithmetic)
 *   engine (src/engine, through src/engine/index.ts only; its WGSL is kernels/)
 *   types (src/types: shapes every layer shares; imports nothing)
 *
 * The page and the tools are peers: neither imports the other. A layer may skip layers below it (the worker builds
 * the engine), a pipeline stage may import earlier stages only, and type-only imports count like any other.
 * tests/layering/layering.test.ts shows each rule failing on a deliberate violation.
 */
const path = require('node:path');

const UI = '^src/(ui/|main\\.tsx$)';
const TOOLS = '^src/(eval|bench|cli|node)/';
const WORKER = '^src/worker/';
const API = '^src/api/';
const PIPELINE = '^src/(kvsplit|kvcompile|kvstore|kvlink|generate|analysis)/';
const ENGINE = '^src/engine/';
const TYPES = '^src/types/';
const SRC = '^src/';

const below = (name, from, notTo, comment) => ({ name, severity: 'error', comment, from: { path: from }, to: { path: notTo } });

module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'Modules import each other in a circle.', from: {}, to: { circular: true } },
    below('types-import-nothing', TYPES, SRC.replace('^src/', '^src/(?!types/)'), 'src/types holds shapes only and imports no other layer.'),
    below('engine-below-pipeline', ENGINE, '^src/(?!engine/|types/)', 'The engine knows nothing about chunks: it imports only itself and src/types.'),
    {
      name: 'engine-door', severity: 'error', comment: 'Outside src/engine, import the engine through src/engine/index.ts only.',
      from: { pathNot: ENGINE }, to: { path: '^src/engine/', pathNot: '^src/engine/index\\.ts$' },
    },
    below('pipeline-below-api', PIPELINE, `${API}|${WORKER}|${UI}|${TOOLS}`, 'The pipeline stages do not reach up to the API, the worker, the page or the tools.'),
    below('analysis-is-arithmetic', '^src/analysis/', '^src/(?!analysis/|types/)', 'Attention arithmetic reads src/types only.'),
    below('split-first', '^src/kvsplit/', '^src/(kvcompile|kvstore|kvlink|generate|analysis)/', 'split → compile → store → link → generate: a stage imports earlier stages only.'),
    below('compile-before-store', '^src/kvcompile/', '^src/(kvstore|kvlink|generate|analysis)/', 'split → compile → store → link → generate: a stage imports earlier stages only.'),
    below('store-before-link', '^src/kvstore/', '^src/(kvlink|generate|analysis)/', 'split → compile → store → link → generate: a stage imports earlier stages only.'),
    below('link-before-generate', '^src/kvlink/', '^src/(generate|analysis)/', 'split → compile → store → link → generate: a stage imports earlier stages only.'),
    below('api-below-worker', API, `${WORKER}|${UI}|${TOOLS}`, 'The API does not know the worker, the page or the tools.'),
    below('worker-below-ui', WORKER, `${UI}|${TOOLS}`, 'The worker transport does not know the page or the tools.'),
    below('ui-not-tools', UI, TOOLS, 'The page does not import the command-line tools.'),
    below('tools-not-ui', TOOLS, UI, 'The tools do not import the page.'),
    {
      name: 'ui-no-engine-code', severity: 'error', comment: 'The page runs no engine code (it knows nothing about WGSL); types only.',
      from: { path: UI }, to: { path: ENGINE, dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    includeOnly: SRC,
    tsPreCompilationDeps: true,
    tsConfig: { fileName: path.join(__dirname, 'tsconfig.json') },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
