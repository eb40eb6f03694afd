"""The check harness of the interop's Python scripts (txn.py, groups848.py).

Each check prints one line, "ok <name>" or "FAIL <name>: <why>", which
run.sh counts; main runs a script's checks and exits 1 if any failed.
"""

import sys
import traceback

failed = 0


def check(name):
    """Decorates a function as the check NAME, run at once: an exception fails it."""
    def run(fn):
        global failed
        try:
            fn()
            print(f"ok {name}", flush=True)
        except Exception as e:  # noqa: BLE001: every failure is the check's
            failed += 1
            why = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " ")
            print(f"FAIL {name}: {why}", flush=True)
    return run


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def main(script, fn):
    """Runs fn, the script's checks; an exception outside a check fails the
    script. Exits 1 if anything failed."""
    global failed
    try:
        fn()
    except Exception:  # noqa: BLE001
        failed += 1
        print(f"FAIL {script}: {traceback.format_exc()}".replace("\n", " "), flush=True)
    sys.exit(1 if failed else 0)
