// Prints one line per conformance run, e.g.
//   conformance 2025-11-25: 25/30 scored scenarios pass; not passing: a, b
// from the checks.json files the suite wrote (-o DIR) and, when given, the
// requirement set's YAML: its `server:` list is what a revision scores;
// `not_scored` entries run but do not count. Without a requirements file
// (0.1.16's default suite) every scenario that ran counts.
//
// A scenario passes when none of its checks is a FAILURE or a WARNING: the
// suite's baseline logic treats a WARNING as failing too.
//
// usage: node .ci/conformance-summary.mjs NAME RESULTS_DIR [REQUIREMENTS_YAML]
import fs from 'node:fs';
import path from 'node:path';

const [name, dir, reqFile] = process.argv.slice(2);

// The scenario name from a results directory: server-<scenario>-<timestamp>.
const results = new Map();
for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
  const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry.name);
  if (!entry.isDirectory() || !m) continue;
  const file = path.join(dir, entry.name, 'checks.json');
  let checks = [];
  try {
    checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    checks = [{ status: 'FAILURE' }];
  }
  const bad = checks.some((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  results.set(m[1], !bad);
}

// The `server:` list of a requirements YAML: top-level key, then "  - name".
function scoredServerScenarios(file) {
  const out = [];
  let inServer = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\S/.test(line)) {
      inServer = /^server:\s*$/.test(line);
      continue;
    }
    const m = /^\s+-\s+([^\s#]+)/.exec(line);
    if (inServer && m) out.push(m[1]);
  }
  return out;
}

const scored = reqFile ? scoredServerScenarios(reqFile) : [...results.keys()];
const failing = scored.filter((s) => results.get(s) !== true);
const notRun = scored.filter((s) => !results.has(s));
const what = reqFile ? 'scored scenarios' : 'scenarios';
let line = `conformance ${name}: ${scored.length - failing.length}/${scored.length} ${what} pass`;
if (failing.length) line += `; not passing: ${failing.join(', ')}`;
if (notRun.length) line += ` (not run: ${notRun.join(', ')})`;
if (reqFile) {
  const extra = [...results.keys()].filter((s) => !scored.includes(s));
  const extraPass = extra.filter((s) => results.get(s));
  if (extra.length) line += ` [not scored: ${extraPass.length}/${extra.length} pass]`;
}
console.log(line);
