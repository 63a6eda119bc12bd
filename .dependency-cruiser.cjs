/**
 * The package graph, enforced by `npm run lint` (dependency-cruiser). Each workspace (a package under `packages/`,
 * and `functions/` as `@sluice/functions`) imports another only as `@sluice/<name>`, declared in its own
 * package.json (workspace `*`); no import loop anywhere. `infra/`, `test/`, `bench/` and `scripts/` belong to the
 * root package, which holds the workspaces.
 */
const { readdirSync, readFileSync } = require('node:fs');

/** The workspace packages: each folder under `packages/`, and `functions/`. */
const WORKSPACES = [...readdirSync('packages').map((name) => `packages/${name}`), 'functions'];

/** The folder of the workspace `@sluice/<name>` (the functions' is `functions/`). */
function folderOf(name) {
  return name === 'functions' ? 'functions' : `packages/${name}`;
}

/** One rule per workspace: its imports of other workspaces are the `@sluice/*` its package.json declares. */
function undeclaredWorkspaceImports() {
  return WORKSPACES.map((folder) => {
    const manifest = JSON.parse(readFileSync(`${folder}/package.json`, 'utf8'));
    const declared = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })
      .filter((dependency) => dependency.startsWith('@sluice/'))
      .map((dependency) => folderOf(dependency.slice('@sluice/'.length)));
    return {
      name: 'no-undeclared-sluice-package',
      comment: `${folder} imports a @sluice package its package.json does not declare.`,
      severity: 'error',
      from: { path: `^${folder}/` },
      to: { path: '^(packages|functions)/', pathNot: [folder, ...declared].map((allowed) => `^${allowed}/`) },
    };
  });
}

module.exports = {
  forbidden: [
    ...undeclaredWorkspaceImports(),
    {
      name: 'no-loop',
      comment: 'An import loop between files (and so between packages): split out what both sides need.',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'no-relative-import-into-a-package',
      comment:
        'A package is reached only through its public entry (import @sluice/<name>), from another package or from ' +
        'the root (functions, infra, test, bench, scripts); test support files (*.test-support.ts) excepted.',
      severity: 'error',
      from: { pathNot: '^packages/[^/]+/' },
      to: { path: '^packages/', pathNot: '\\.test-support\\.ts$', dependencyTypesNot: ['aliased-workspace'] },
    },
    {
      name: 'no-relative-import-across-packages',
      comment: 'A package reaches another only through its public entry: import @sluice/<name>.',
      severity: 'error',
      from: { path: '^packages/([^/]+)/' },
      to: {
        path: '^packages/',
        pathNot: ['^packages/$1/', '\\.test-support\\.ts$'],
        dependencyTypesNot: ['aliased-workspace'],
      },
    },
    {
      name: 'no-package-import-of-infra',
      comment:
        'Only the `npm start` app (packages/local) knows the CDK constructs in infra/; a test that runs them ' +
        'belongs to the root (test/infra/), which holds both.',
      severity: 'error',
      from: { path: '^packages/', pathNot: '^packages/local/' },
      to: { path: '^infra/' },
    },
    {
      name: 'no-undeclared-package',
      comment: "An import of a package that the importing package's package.json does not declare.",
      severity: 'error',
      from: {},
      to: {
        dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'],
        pathNot: '^aws-lambda$',
      },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      // aws-lambda: types only (@types/aws-lambda).
      to: { couldNotResolve: true, pathNot: '^aws-lambda$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['(^|/)node_modules/', '^cdk\\.out/', '^\\.sluice/', '^packages/[^/]+/dist/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
