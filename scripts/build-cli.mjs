// Compiles the CLI (cli/main.ts and everything it imports) into dist/ with esbuild (installed
// with tsx), so `orch` starts without compiling TypeScript on every run. bin/orch.mjs runs dist/
// only while it is fresh (bin/dist-state.mjs); otherwise the sources through tsx.
//
// - Code splitting: a module the sources import dynamically (`await import(...)`) becomes its own
//   chunk, so `orch --help` loads none of the Redis, queue, ssh or statistics code.
// - Packages stay external: node_modules is resolved at run time, as with tsx.
// - import.meta.url of each source module is rewritten to that module's own URL in the source
//   tree, so a file read relative to it (store/lua/*.lua, native/limits.json, worker's tether.sh,
//   native/build/graphrt) resolves exactly as when the sources run.
// `npm ci` runs it as postinstall with --if-possible (a failure warns; orch then runs the
// sources); `npm run build` fails loudly. Usage: node scripts/build-cli.mjs [--if-possible] [--out DIR]
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { BUILD_INFO, DIST, ROOT } from '../bin/dist-state.mjs';

const argv = process.argv.slice(2);
const ifPossible = argv.includes('--if-possible');
const outArg = argv.indexOf('--out');
const out = outArg >= 0 ? resolve(argv[outArg + 1]) : resolve(DIST);

function fail(msg) {
  if (ifPossible) {
    console.warn(
      `[orch] CLI build skipped: ${msg}\n[orch] orch runs the TypeScript sources (slower start) until \`npm run build\` succeeds.`,
    );
    process.exit(0);
  }
  console.error(`[orch] CLI build failed: ${msg}`);
  process.exit(1);
}

let esbuild;
try {
  esbuild = await import('esbuild');
} catch (err) {
  fail(`esbuild cannot be loaded (it comes with tsx: npm ci): ${err.message}`);
}

/** Rewrites `import.meta.url` in every source module to the URL of that module in the tree. */
const sourceUrls = (outdir) => ({
  name: 'source-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return { contents: text, loader: 'ts' };
      const rel = relative(outdir, args.path).split('\\').join('/');
      return {
        contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`),
        loader: 'ts',
      };
    });
  },
});

// Built next to the target and renamed into place, so a concurrent `orch` sees the old dist or
// the new one, never half of one (between the two renames it sees none and runs the sources).
const tmp = `${out.replace(/\/$/, '')}.building-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
mkdirSync(tmp, { recursive: true });
const startedMs = Date.now();
let result;
try {
  result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { main: 'cli/main.ts' },
    outdir: tmp,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    // the chunks live in the final directory, not in tmp: their URLs are computed for it
    plugins: [sourceUrls(out)],
  });
} catch (err) {
  rmSync(tmp, { recursive: true, force: true });
  fail(err.message);
}
const inputs = Object.keys(result.metafile.inputs)
  .filter((p) => !p.startsWith('node_modules/'))
  .sort();
writeFileSync(join(tmp, BUILD_INFO), `${JSON.stringify({ startedMs, main: 'main.js', inputs }, null, 1)}\n`);
const old = `${out.replace(/\/$/, '')}.old-${process.pid}`;
mkdirSync(dirname(out), { recursive: true });
try {
  renameSync(out, old);
} catch {
  // no previous build
}
renameSync(tmp, out);
rmSync(old, { recursive: true, force: true });
console.log(`[orch] CLI compiled: ${relative(ROOT, out) || out}/ (${inputs.length} source files)`);
