/// <reference types="vitest/config" />
// Builds web/dist: hashed assets under assets/ (the server caches those for a year), relative
// URLs (the UI is mounted at /ui/), and a .gz twin of every compressible file so the server can
// answer Accept-Encoding: gzip without compressing at run time. Output is byte-reproducible
// (tests/integration/web_bundle.test.sh rebuilds and compares with the committed dist).
// PDF.js (with its worker) and KaTeX (with its stylesheet and fonts) are lazy chunks of the same
// bundle, so the UI never asks another origin for anything.
import { gzipSync } from 'node:zlib';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else yield p;
  }
}

// Node's gzip writes no file name and a zero mtime, so the bytes depend only on the input.
function precompress(): Plugin {
  let outDir = 'dist';
  return {
    name: 'vkllm-precompress',
    apply: 'build',
    configResolved(c) {
      outDir = c.build.outDir;
    },
    closeBundle() {
      let raw = 0;
      let gz = 0;
      for (const file of walk(outDir)) {
        if (!/\.(html|m?js|css|svg|json|txt)$/.test(file)) continue;
        const data = readFileSync(file);
        const packed = gzipSync(data, { level: 9 });
        raw += data.length;
        gz += packed.length;
        writeFileSync(file + '.gz', packed);
      }
      console.log(`vkllm web bundle: ${raw} bytes, ${gz} bytes gzipped`);
    },
  };
}

// KaTeX's stylesheet offers each font as woff2, woff and ttf; every browser the UI supports takes
// woff2, so only those are bundled (the others would only grow the binary that embeds dist).
function katexWoff2Only(): Plugin {
  return {
    name: 'vkllm-katex-woff2-only',
    enforce: 'pre',
    transform(code, id) {
      if (!/katex[\\/]dist[\\/]katex(\.min)?\.css$/.test(id)) return null;
      const out = code.replace(/,\s*url\([^)]*\.woff\)\s*format\("woff"\)|,\s*url\([^)]*\.ttf\)\s*format\("truetype"\)/g, '');
      if (/\.(woff|ttf)\)/.test(out)) this.error('katex.css: a woff or ttf font is still referenced');
      return { code: out, map: null };
    },
  };
}

export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
  },
  plugins: [katexWoff2Only(), precompress()],
  test: {
    environment: 'node', // tests that need a DOM say so (@vitest-environment jsdom)
    include: ['src/**/*.test.ts'],
  },
});
