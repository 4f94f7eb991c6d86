#!/usr/bin/env node
// Compare `engram refs` with the TypeScript language service's `findReferences` on a
// pinned third-party package: precision and recall, micro-averaged, per minimum
// confidence. The TypeScript counterpart of jedi_refs.py; the same rule and metrics.
//
// usage: node tools/graph-eval/ts_refs.mjs ENGRAM_BIN [--package rxjs@7.8.2]
//            [--typescript 5.9.3] [--src src] [--count 100] [--work DIR] [--sha SHA1]
//            [--misses N] [--floor PRECISION,RECALL]
//
// --misses N prints N examples of each form of miss (the counts are always printed).
// --floor makes it a check (the CI smoke test in tests/it/code_graph.rs): exit 1 when precision
// or recall at confidence `imported` (every reference findReferences returns) is below it.
//
// `typescript` is installed with npm into --work (default a temporary directory), never
// into the repository; the package's registry tarball is fetched with `npm pack`, its
// sha1 checked against the pin below (or --sha), and unpacked. Its TypeScript sources
// under --src (`.ts`, `.tsx`, `.mts`, `.cts`; tests and `.d.ts` left out) are copied into
// one tree, which both engram (a fresh store) and the language service see.
//
// Definitions are chosen by a fixed rule: every function, method and class engram's
// `overview` reports whose name is not `constructor`, sorted by path and line, then
// `count` of them evenly spaced (index floor(i * N / count)). For each, the language
// service is asked for the references of the defining name and engram for
// `refs --at PATH:LINE --min-confidence ambiguous`.
//
// What is compared. engram reports call sites (`call`, `construct`) and import
// statements naming the definition (`import`, by line); `findReferences` reports every
// use of the symbol. A TypeScript reference counts as a call when the name is the
// callee of a call or `new` (`f(…)`, `o.f(…)`, `new C(…)`, `f<T>(…)`), and as an import
// when it sits in an `import` statement or a re-export (`export { f } from '…'`).
// Precision: engram's references that the language service reports too (as any use),
// over engram's. Recall: its call and import references that engram reports, over its;
// recall against every use (values, types, property reads) is printed beside it. The
// definition's own name and other declarations of the symbol (overloads, interface
// members it implements, local export lists) are left out of both. Positions: path,
// line and column (1-based, bytes) for calls; path and line for imports.
//
// findReferences links a method to the base-class and interface members it overrides or
// implements, and reports their references too (`this._execute()` in a base class, for
// an override). The first table counts them, as the language service returns them; the
// second keeps only the definition's own symbol and its import aliases.

import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const LEVELS = ["resolved", "imported", "same-name", "ambiguous"];
// sha1 of the registry tarballs (`npm pack --json` shasum), so a run measures the same bytes.
const PINNED = {
  "rxjs@7.8.2": "955bc473ed8af11a002a2be52071bf475638607b",
  "mobx@6.15.0": "78b9b82d383724eebb4b6e50c2eb4ae2da861cb5",
};
const TS_EXT = /\.(ts|tsx|mts|cts)$/;
const SKIP = /(^|\/)(tests?|__tests__|spec)\/|\.(test|spec)\.[cm]?tsx?$|\.d\.[cm]?ts$/;

function args() {
  const a = { package: "rxjs@7.8.2", typescript: "5.9.3", src: "src", count: 100, misses: 0 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith("--")) {
      a.engram = k;
      continue;
    }
    const v = argv[++i];
    if (!["package", "typescript", "src", "count", "work", "sha", "misses", "floor"].includes(k.slice(2))) die(`unknown option ${k}`);
    if (v === undefined) die(`${k} needs a value`);
    a[k.slice(2)] = ["count", "misses"].includes(k.slice(2)) ? Number(v) : v;
  }
  if (!(a.count > 0) || !(a.misses >= 0)) die("--count needs a positive number and --misses a number");
  if (!a.engram) die("usage: node ts_refs.mjs ENGRAM_BIN [--package NAME@VERSION] [--typescript VERSION] [--src DIR] [--count N] [--work DIR] [--sha SHA1] [--misses N] [--floor P,R]");
  return a;
}

function die(msg) {
  console.error(msg);
  process.exit(2);
}

function run(cmd, argv, opts = {}) {
  return execFileSync(cmd, argv, { encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"], ...opts });
}

function fetchPackage(a, work) {
  const pack = path.join(work, "pack");
  fs.mkdirSync(pack, { recursive: true });
  const info = JSON.parse(run("npm", ["pack", a.package, "--json", "--pack-destination", pack]))[0];
  const want = a.sha || PINNED[a.package];
  if (!want) die(`no pinned sha1 for ${a.package}: pass --sha ${info.shasum} after checking it`);
  if (info.shasum !== want) die(`${a.package}: tarball sha1 ${info.shasum}, pinned ${want}`);
  const unpacked = path.join(work, "unpacked");
  fs.rmSync(unpacked, { recursive: true, force: true });
  fs.mkdirSync(unpacked, { recursive: true });
  run("tar", ["xzf", path.join(pack, info.filename), "-C", unpacked]);
  const from = path.join(unpacked, "package", a.src);
  if (!fs.existsSync(from)) die(`${a.package} has no ${a.src}/ in its tarball`);
  const src = path.join(work, "src");
  fs.rmSync(src, { recursive: true, force: true });
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      const full = path.join(dir, e.name);
      const rel = path.relative(from, full).split(path.sep).join("/");
      if (e.isDirectory()) walk(full);
      else if (TS_EXT.test(e.name) && !SKIP.test(rel)) {
        fs.mkdirSync(path.join(src, path.dirname(rel)), { recursive: true });
        fs.copyFileSync(full, path.join(src, rel));
        files.push(rel);
      }
    }
  };
  walk(from);
  if (!files.length) die(`${a.package}: no TypeScript sources under ${a.src}/`);
  return { src, files, shasum: info.shasum };
}

function installTypescript(version, work) {
  const prefix = path.join(work, "typescript-" + version);
  if (!fs.existsSync(path.join(prefix, "node_modules", "typescript", "package.json"))) {
    fs.mkdirSync(prefix, { recursive: true });
    run("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, `typescript@${version}`]);
  }
  const ts = createRequire(path.join(prefix, "index.js"))("typescript");
  if (ts.version !== version) die(`installed typescript ${ts.version}, asked for ${version}`);
  return ts;
}

function engram(bin, store, ...argv) {
  return JSON.parse(run(bin, ["--store", store, ...argv, "--json"]));
}

function choose(bin, store, count) {
  const symbols = [];
  for (const f of engram(bin, store, "overview", "-k", "1000000").files) {
    if (!TS_EXT.test(f.path)) continue;
    for (const s of f.symbols) {
      if (["function", "method", "class"].includes(s.kind) && s.name !== "constructor") {
        symbols.push([f.path, s.line, s.name, s.kind]);
      }
    }
  }
  symbols.sort((x, y) => (x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] - y[1] || (x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0)));
  const n = symbols.length;
  const out = [];
  for (let i = 0; i < Math.min(count, n); i++) out.push(symbols[Math.floor((i * n) / count)]);
  return [out, n];
}

function languageService(ts, src, files) {
  const roots = files.map((f) => path.join(src, f));
  const options = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    jsx: ts.JsxEmit.Preserve,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    experimentalDecorators: true,
  };
  const host = {
    getScriptFileNames: () => roots,
    getScriptVersion: () => "1",
    getScriptSnapshot: (f) => {
      const t = ts.sys.readFile(f);
      return t === undefined ? undefined : ts.ScriptSnapshot.fromString(t);
    },
    getCurrentDirectory: () => src,
    getCompilationSettings: () => options,
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  };
  return ts.createLanguageService(host, ts.createDocumentRegistry());
}

// The deepest node starting at or before `pos` and ending after it (the name's token).
function nodeAt(ts, sf, pos) {
  let n = sf;
  for (;;) {
    const next = n.getChildren(sf).find((c) => c.getStart(sf) <= pos && pos < c.getEnd());
    if (!next) return n;
    n = next;
  }
}

// The file an import statement's module names, when it resolves.
function moduleFile(checker, spec) {
  const m = spec && checker.getSymbolAtLocation(spec);
  const d = m && m.valueDeclaration;
  return d && d.kind !== undefined && d.fileName ? d.fileName : null;
}

// Whether the name at `n` reaches the definition in `defFile` through a module that only
// re-exports it (`import { f } from './index'` where index has `export * from './f'`),
// for the miss categories: the import statement, or a use of the name it binds.
function throughReexport(ts, checker, n, defFile) {
  let spec = null;
  for (let p = n; p && !spec; p = p.parent) {
    if (ts.isImportDeclaration(p) || ts.isExportDeclaration(p)) spec = p.moduleSpecifier;
    if (ts.isStatement(p) && !spec) break;
  }
  if (!spec && ts.isIdentifier(n)) {
    const sym = checker.getSymbolAtLocation(n);
    const decl = sym && sym.flags & ts.SymbolFlags.Alias ? sym.declarations?.[0] : null;
    for (let p = decl; p && !spec; p = p.parent) if (ts.isImportDeclaration(p)) spec = p.moduleSpecifier;
  }
  const f = moduleFile(checker, spec);
  return !!f && f !== defFile;
}

function inImport(ts, n) {
  for (let p = n; p; p = p.parent) {
    if (ts.isImportDeclaration(p) || ts.isImportEqualsDeclaration(p)) return "import";
    if (ts.isExportDeclaration(p)) return p.moduleSpecifier ? "reexport" : null;
    if (ts.isStatement(p)) return null;
  }
  return null;
}

// How a reference is used: `call` (plain), `this`, `super`, `member` (o.f(…)), `new`, or null.
function callKind(ts, n) {
  let callee = n;
  let via = "call";
  const p = n.parent;
  if (p && ts.isPropertyAccessExpression(p) && p.name === n) {
    callee = p;
    via = p.expression.kind === ts.SyntaxKind.ThisKeyword ? "this" : p.expression.kind === ts.SyntaxKind.SuperKeyword ? "super" : "member";
  }
  let q = callee.parent;
  while (q && (ts.isNonNullExpression(q) || ts.isParenthesizedExpression(q)) && q.expression === callee) {
    callee = q;
    q = q.parent;
  }
  if (q && ts.isCallExpression(q) && q.expression === callee) return via;
  if (q && ts.isNewExpression(q) && q.expression === callee) return "new";
  return null;
}

// Byte column (1-based) of `character` (UTF-16 units) on a line.
function byteColumn(lineText, character) {
  return Buffer.byteLength(lineText.slice(0, character), "utf8") + 1;
}

function declarationPos(ts, sf, line, name) {
  const start = sf.getPositionOfLineAndCharacter(line - 1, 0);
  const lineText = sf.text.slice(start).split("\n", 1)[0];
  let found = null;
  const visit = (node) => {
    if (found || node.getEnd() < start || node.getStart(sf) > start + lineText.length) return;
    const nm = node.name;
    if (nm && (ts.isIdentifier(nm) || ts.isPrivateIdentifier(nm) || ts.isStringLiteral(nm) || ts.isNumericLiteral(nm)) && nm.text === name) {
      const p = nm.getStart(sf);
      if (p >= start && p <= start + lineText.length) {
        found = p;
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function main() {
  const a = args();
  const work = a.work ? path.resolve(a.work) : fs.mkdtempSync(path.join(os.tmpdir(), "engram-ts-eval-"));
  fs.mkdirSync(work, { recursive: true });
  const ts = installTypescript(a.typescript, work);
  const { src, files, shasum } = fetchPackage(a, work);
  const store = path.join(work, "store");
  fs.rmSync(store, { recursive: true, force: true });
  run(a.engram, ["--store", store, "index", src]);
  const [chosen, total] = choose(a.engram, store, a.count);
  const ls = languageService(ts, src, files);
  const program = ls.getProgram();
  const checker = program.getTypeChecker();
  const lines = files.reduce((n, f) => n + program.getSourceFile(path.join(src, f)).getLineStarts().length, 0);

  // Per level: engram refs, of them correct, TS call+import refs, of them found, every TS use, of them found.
  const tally = {};
  for (const which of ["all", "own"]) tally[which] = Object.fromEntries(LEVELS.map((lv) => [lv, [0, 0, 0, 0, 0, 0]]));
  const missed = {}; // category -> [count, examples] for TS calls and imports engram misses at `imported`
  const wrong = []; // engram refs at `imported` the language service does not report
  const missedAll = {}; // category -> count engram misses even at `ambiguous`
  let wrongAll = 0;
  const byDef = {}; // definition -> missed count, to show how concentrated the misses are
  const note = (cat, ex, def) => {
    byDef[def] = (byDef[def] ?? 0) + 1;
    const m = (missed[cat] ??= [0, []]);
    m[0]++;
    if (m[1].length < a.misses) m[1].push(ex);
  };
  const skipped = [];
  const byKind = {}; // definition kind -> [TS call+import refs, found at `imported`]
  for (const [p, line, name, defKind] of chosen) {
    const abs = path.join(src, p);
    const sf = program.getSourceFile(abs);
    const pos = sf && declarationPos(ts, sf, line, name);
    if (pos == null) {
      skipped.push(`${name} (${p}:${line})`);
      continue;
    }
    // `all`: every group findReferences returns; `own`: the definition's own symbol and
    // its import aliases, leaving out the base-class and interface members an override
    // or implementation is linked to (their callers reach this one only through dispatch).
    const sets = { all: { calls: new Map(), uses: new Set() }, own: { calls: new Map(), uses: new Set() } };
    for (const sym of ls.findReferences(abs, pos) ?? []) {
      const own =
        sym.definition.kind === "alias" ||
        sym.references.some(
          (r) => r.isDefinition && r.fileName === abs && sf.getLineAndCharacterOfPosition(r.textSpan.start).line + 1 === line,
        );
      const into = own ? [sets.all, sets.own] : [sets.all];
      for (const r of sym.references) {
        const rel = path.relative(src, r.fileName).split(path.sep).join("/");
        if (rel.startsWith("..") || path.isAbsolute(rel)) continue;
        const rsf = program.getSourceFile(r.fileName);
        const lc = rsf.getLineAndCharacterOfPosition(r.textSpan.start);
        if (rel === p && lc.line + 1 === line) continue; // the definition itself
        const node = nodeAt(ts, rsf, r.textSpan.start);
        const imp = inImport(ts, node);
        if (imp) {
          const key = `${rel}:${lc.line + 1}:`;
          const cat = throughReexport(ts, checker, node, abs) ? `${imp}, from a module that re-exports it` : imp;
          for (const s of into) s.calls.set(key, cat), s.uses.add(key);
          continue;
        }
        if (r.isDefinition) continue;
        const lineText = rsf.text.slice(rsf.getLineStarts()[lc.line]).split("\n", 1)[0];
        const key = `${rel}:${lc.line + 1}:${byteColumn(lineText, lc.character)}`;
        let kind = callKind(ts, node);
        if ((kind === "call" || kind === "new") && throughReexport(ts, checker, node, abs)) kind += ", of a name imported from a module that re-exports it";
        for (const s of into) {
          s.uses.add(key);
          if (kind) s.calls.set(key, own ? kind : `${kind}, through a base or interface member`);
        }
      }
    }
    const got = engram(a.engram, store, "refs", "--at", `${p}:${line}`, "--min-confidence", "ambiguous", "-k", "100000").refs;
    for (const lv of LEVELS) {
      const ok = LEVELS.slice(0, LEVELS.indexOf(lv) + 1);
      const mine = new Set(got.filter((r) => ok.includes(r.confidence)).map((r) => `${r.path}:${r.line}:${r.column ?? ""}`));
      for (const which of ["all", "own"]) {
        const { calls, uses } = sets[which];
        const t = tally[which][lv];
        t[0] += mine.size;
        t[1] += [...mine].filter((k) => uses.has(k)).length;
        t[2] += calls.size;
        t[3] += [...calls.keys()].filter((k) => mine.has(k)).length;
        t[4] += uses.size;
        t[5] += [...uses].filter((k) => mine.has(k)).length;
      }
      if (lv === "ambiguous") {
        for (const [k, cat] of sets.all.calls) if (!mine.has(k)) missedAll[cat] = (missedAll[cat] ?? 0) + 1;
        for (const k of mine) if (!sets.all.uses.has(k)) wrongAll++;
      }
      if (lv === "imported") {
        const bk = (byKind[defKind] ??= [0, 0, 0]);
        bk[0]++;
        bk[1] += sets.all.calls.size;
        bk[2] += [...sets.all.calls.keys()].filter((k) => mine.has(k)).length;
        for (const [k, cat] of sets.all.calls) if (!mine.has(k)) note(cat, `${name} (${p}:${line}) at ${k}`, `${name} (${p}:${line})`);
        for (const k of mine) if (!sets.all.uses.has(k)) wrong.push(`${name} (${p}:${line}) at ${k}`);
      }
    }
  }
  const ratio = (x, y) => (y ? (x / y).toFixed(3) : "nan");
  console.log(
    `package ${a.package} (tarball sha1 ${shasum}; ${files.length} files, ${lines} lines of TypeScript under ${a.src}/), ` +
      `typescript ${ts.version} findReferences, ${chosen.length - skipped.length} of ${total} definitions` +
      (skipped.length ? ` (${skipped.length} chosen but not found on their line: ${skipped.slice(0, 5).join(", ")})` : ""),
  );
  for (const which of ["all", "own"]) {
    console.log(
      which === "all"
        ? "\nEvery reference findReferences returns:"
        : "\nThe definition's own symbol and its import aliases (base-class and interface members it is linked to left out):",
    );
    console.log("| min confidence | engram refs | precision | TS call+import refs | recall | TS uses | recall (all uses) |");
    console.log("|---|---|---|---|---|---|---|");
    for (const lv of LEVELS) {
      const [e, ok, tc, tf, tu, uf] = tally[which][lv];
      console.log(`| ${lv} | ${e} | ${ratio(ok, e)} | ${tc} | ${ratio(tf, tc)} | ${tu} | ${ratio(uf, tu)} |`);
    }
  }
  console.log(
    "\nRecall at `imported` by the kind of definition: " +
      Object.entries(byKind)
        .map(([k, [d, n, f]]) => `${k} (${d} definitions) ${f}/${n} = ${ratio(f, n)}`)
        .join(", "),
  );
  console.log("\nTS call and import references engram misses at `imported`, by form:");
  for (const [cat, [n, ex]] of Object.entries(missed).sort((x, y) => y[1][0] - x[1][0])) {
    console.log(`  ${cat}: ${n}`);
    for (const e of ex) console.log(`    ${e}`);
  }
  const top = Object.entries(byDef).sort((x, y) => y[1] - x[1]).slice(0, 8);
  console.log(`  the definitions with most misses: ${top.map(([d, n]) => `${d} ${n}`).join(", ")}`);
  console.log(`engram references at \`imported\` the language service does not report: ${wrong.length}`);
  for (const e of wrong.slice(0, a.misses)) console.log(`    ${e}`);
  const all = Object.entries(missedAll).sort((x, y) => y[1] - x[1]);
  console.log(`Missed even at \`ambiguous\`: ${all.map(([c, n]) => `${c} ${n}`).join(", ")}; engram references there the language service does not report: ${wrongAll}`);
  if (a.floor) {
    const [wantP, wantR] = a.floor.split(",").map(Number);
    const [e, ok, tc, tf] = tally.all.imported;
    const p = e ? ok / e : NaN;
    const r = tc ? tf / tc : NaN;
    // NaN (nothing reported, or nothing to find) fails the check as well.
    if (!(p >= wantP && r >= wantR)) {
      console.error(`below the floor at imported: precision ${p.toFixed(3)} (floor ${wantP}), recall ${r.toFixed(3)} (floor ${wantR})`);
      process.exit(1);
    }
  }
}

main();
