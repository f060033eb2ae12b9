#!/usr/bin/env node
// fill-lock.mjs - add to package-lock.json the platform packages that npm
// left out because the registry this machine reaches does not carry them.
//
//   cd tests/agents && npm install && node fill-lock.mjs
//
// opencode-ai lists twelve platform packages as optionalDependencies; the
// registry here serves only some of them (no darwin, most windows and arm64
// builds are absent, 404).  `npm install` drops an optional dependency it
// cannot fetch, and then `npm ci` refuses the lockfile ("Missing:
// opencode-darwin-arm64@ from lock file").  An entry with the package's
// os/cpu/libc, as the full registry would have recorded it, makes npm ci skip
// it on every other platform without fetching anything; on linux-x64-glibc
// (this machine) each missing one is for another platform.  os/cpu/libc come
// from the name, the way opencode names its builds (checked against the
// versions the registry does carry).
import fs from 'node:fs';

const file = new URL('./package-lock.json', import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pk = lock.packages;

function platformOf(name) {
  const m = /^opencode-(darwin|linux|windows)-(x64|arm64)(-baseline)?(-musl)?$/.exec(name);
  if (!m) return null;
  const p = { os: [m[1] === 'windows' ? 'win32' : m[1]], cpu: [m[2]] };
  if (m[4]) p.libc = ['musl'];
  return p;
}

let added = 0;
for (const [key, entry] of Object.entries(pk)) {
  if (!key.startsWith('node_modules/') || !entry.optionalDependencies) continue;
  for (const [dep, version] of Object.entries(entry.optionalDependencies)) {
    const at = `node_modules/${dep}`;
    if (pk[at]) continue;
    const plat = platformOf(dep);
    if (!plat) {
      process.stderr.write(`fill-lock: ${dep} (of ${key}) is missing and not a known platform package\n`);
      process.exitCode = 1;
      continue;
    }
    pk[at] = { version, ...plat, optional: true };
    added++;
  }
}
// npm keeps "packages" sorted by path.
lock.packages = Object.fromEntries(Object.entries(pk).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
process.stdout.write(`fill-lock: added ${added} entries\n`);
