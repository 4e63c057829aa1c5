#!/usr/bin/env python3
"""Lists the ops of kilnrt's registry (`kilnrt ops`) that no C++ unit test names.

An op counts as tested when its name appears as a string literal ("Relu") in tests/cpp/*.cc or src/**/*_test.cc,
the GoogleTest sources, i.e. some unit test builds a node of that type (the ONNX conformance cases do not count).
Custom-domain ops (`domain::Name`) are matched by their name. Exit status 1 when any op is missing, so the
check can run under ctest / pytest and stays at zero.

Usage: scripts/op_test_audit.py [path/to/kilnrt]   (default: $KILNRT_BUILD_DIR/kilnrt, else build/kilnrt)
"""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def registry_ops(cli):
    out = subprocess.run([cli, "ops"], check=True, capture_output=True, text=True).stdout
    ops = []
    for line in out.splitlines():
        if not line.strip():
            continue
        name = line.split()[0]
        name = name.split("::")[-1]
        if name not in ops:
            ops.append(name)
    return ops


def test_sources():
    files = sorted((ROOT / "tests" / "cpp").glob("*.cc")) + sorted((ROOT / "src").rglob("*_test.cc"))
    return {f: f.read_text(errors="replace") for f in files}


def untested(ops, sources):
    text = "\n".join(sources.values())
    return [op for op in ops if not re.search(r'"' + re.escape(op) + r'"', text)]


def main(argv):
    cli = argv[1] if len(argv) > 1 else os.path.join(os.environ.get("KILNRT_BUILD_DIR", str(ROOT / "build")), "kilnrt")
    if not os.path.exists(cli):
        print(f"op_test_audit: no kilnrt CLI at {cli}: build it first (target kilnrt_cli)", file=sys.stderr)
        return 2
    ops = registry_ops(cli)
    missing = untested(ops, test_sources())
    print(f"op_test_audit: {len(ops)} registry ops, {len(ops) - len(missing)} named by a C++ unit test, "
          f"{len(missing)} missing")
    for op in missing:
        print(f"  missing: {op}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
