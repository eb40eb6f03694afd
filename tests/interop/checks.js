'use strict'
// The checks of the interop scripts: each prints "ok <name>" or
// "FAIL <name>: <why>", which run.sh counts, and exit ends the script with
// status 1 if any failed.

let failed = 0
const ok = name => console.log(`ok ${name}`)
const fail = (name, why) => {
  failed++
  console.log(`FAIL ${name}: ${why}`)
}

// check runs one named check; fn throws to fail it.
async function check (name, fn) {
  try {
    await fn()
    ok(name)
  } catch (e) {
    fail(name, e && e.stack ? `${e.name}: ${e.message}${e.type ? ` (${e.type})` : ''}` : String(e))
  }
}

function assertEqual (what, got, want) {
  const g = JSON.stringify(got)
  const w = JSON.stringify(want)
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`)
}

// run runs a script's main and exits: 1 if a check failed or main threw.
function run (script, main) {
  main().then(
    () => process.exit(failed ? 1 : 0),
    e => {
      fail(script, e && e.stack ? e.stack : String(e))
      process.exit(1)
    }
  )
}

module.exports = { ok, fail, check, assertEqual, run }
