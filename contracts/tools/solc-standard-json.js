// Speaks the two parts of native solc's command line that forge uses:
//   solc --version            -> "Version: <full version>" (what forge parses)
//   solc ... --standard-json  -> reads the Standard JSON input on stdin and
//                                writes the Standard JSON output to stdout.
// Forge puts the sources it resolved into the JSON input, but it names files
// outside the project root (../tools/node_modules) by absolute path while the
// relative imports inside them resolve to "../tools/..." names. Native solc
// then reads those files from disk (--base-path / --include-path); this
// wrapper does the same with solcjs's import callback, relative to the base
// path forge passes (the project root). See contracts/README.md.
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require(path.join(__dirname, '..', '..', 'tools', 'node_modules', 'solc'));

const args = process.argv.slice(2);
if (args.includes('--version')) {
  process.stdout.write('solc, the solidity compiler commandline interface\nVersion: ' + solc.version() + '\n');
  process.exit(0);
}
if (!args.includes('--standard-json')) {
  process.stderr.write('contracts/tools/solc: only --version and --standard-json are supported (solcjs backend)\n');
  process.exit(2);
}
function flagValues(name) {
  const out = [];
  args.forEach((a, i) => {
    if (a === name && i + 1 < args.length) out.push(args[i + 1]);
    else if (a.startsWith(name + '=')) out.push(a.slice(name.length + 1));
  });
  return out;
}
const basePath = flagValues('--base-path')[0] || process.cwd();
const roots = [basePath, ...flagValues('--include-path')];

function findImports(name) {
  const candidates = path.isAbsolute(name) ? [name] : roots.map((r) => path.resolve(r, name));
  for (const file of candidates) {
    try {
      return { contents: fs.readFileSync(file, 'utf8') };
    } catch (_) {
      // try the next root
    }
  }
  return { error: 'File not found: ' + name };
}

const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const output = JSON.parse(solc.compile(Buffer.concat(chunks).toString('utf8'), { import: findImports }));
  // Third-party warnings (forge-std under the newest compiler) are not ours to fix. foundry.toml's
  // ignored_warnings_from cannot catch them because forge names those files by absolute path,
  // so drop them here. Errors, and anything about our own sources, pass through.
  if (Array.isArray(output.errors)) {
    output.errors = output.errors.filter(
      (e) => e.severity === 'error' || !(e.sourceLocation && /[\\/]node_modules[\\/]/.test(e.sourceLocation.file)),
    );
    // solc's "more than 256 warnings" notice has no source location; it only ever follows theirs.
    output.errors = output.errors.filter((e) => e.errorCode !== '4591');
  }
  process.stdout.write(JSON.stringify(output));
});
