"""check-inertia's verdict on every reference model, and what changed between two runs.

    python benchmarks/inertia_verdicts.py --output verdicts.json
    python benchmarks/inertia_verdicts.py --compare before.json after.json [--markdown]

The first form runs ``dyn check-inertia MODEL --format json`` in this interpreter on every
URDF example-robot-data ships (fixed base, and again with ``--free-flyer``), every MJCF
model of gymnasium's MuJoCo environments and dm_control's robot and animal models (the
lists of ``tests/reference_models.py``), and writes one record per run: the exit code, the
verdict (``pass``: exit 0 without warnings, ``warnings``: exit 0 with warnings, ``fail``:
exit 1, ``refused``: exit 2) and the failing findings as ``link check severity``. The second
form prints how many runs pass (exit 0) in each file, per collection, and every run whose
verdict (with ``--verdicts-only``) or set of failing findings changed, with the findings
that appeared and went, and, for each that went, what the second run says of that check.
Only failing findings are compared, so the output reads the same before and after JSON
``findings`` stopped listing passes.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from reference_models import (dm_control_models, gymnasium_models,  # noqa: E402
                              robot_urdfs, robots_root)


def runs() -> list[tuple[str, str, list[str]]]:
    """(collection, model id, dyn arguments) for every run, in a stable order."""
    root = robots_root()
    result = []
    for path in robot_urdfs():
        name = os.path.relpath(path, root)
        result.append(("example-robot-data", name, [path]))
        result.append(("example-robot-data --free-flyer", name, [path, "--free-flyer"]))
    for path in gymnasium_models():
        result.append(("gymnasium", os.path.basename(path), [path]))
    for path in dm_control_models():
        name = path.split(f"{os.sep}dm_control{os.sep}", 1)[-1]
        result.append(("dm_control", name, [path]))
    return result


def verdict_of(args: list[str]) -> dict:
    """One check-inertia run in this interpreter: exit code, verdict, failing findings."""
    from treedyn.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run(["check-inertia", *args, "--format", "json", "--all"])
        except SystemExit as stop:
            code = 0 if stop.code is None else int(stop.code)
    failing, states = [], {}
    if code in (0, 1):
        document = json.loads(out.getvalue())
        every = [*document["findings"], *document.get("passes", ()),
                 *document.get("skipped", ())]
        failing = sorted(f"{f['body']} {f['check']} {f['severity']}"
                         for f in every if f["status"] == "fail")
        states = {f"{f['body']} {f['check']}": f"{f['status']}: {f['message'][:240]}"
                  for f in every}
    warnings = any(entry.endswith(" warning") for entry in failing)
    verdict = {0: "warnings" if warnings else "pass", 1: "fail"}.get(code, "refused")
    stderr = err.getvalue().strip().splitlines()
    return {"exit": code, "verdict": verdict, "failing": failing, "states": states,
            "stderr": stderr[0] if stderr else ""}


def record(path: str) -> None:
    records = []
    for collection, name, args in runs():
        entry = {"collection": collection, "model": name, **verdict_of(args)}
        records.append(entry)
        print(f"{entry['verdict']:8} {collection}: {name}", file=sys.stderr)
    with open(path, "w") as stream:
        json.dump(records, stream, indent=1)
        stream.write("\n")


def compare(before_path: str, after_path: str, markdown: bool, changed_only: bool) -> None:
    with open(before_path) as stream:
        before = {(r["collection"], r["model"]): r for r in json.load(stream)}
    with open(after_path) as stream:
        after = {(r["collection"], r["model"]): r for r in json.load(stream)}
    collections = list(dict.fromkeys(key[0] for key in [*before, *after]))
    bar = "|" if markdown else ""
    print(f"{bar} collection {bar} runs {bar} exit 0 before {bar} exit 0 after "
          f"{bar} no warning before {bar} no warning after {bar}".strip())
    if markdown:
        print("|---|---|---|---|---|---|")
    for collection in collections:
        old = [r for k, r in before.items() if k[0] == collection]
        new = [r for k, r in after.items() if k[0] == collection]
        counts = [sum(r["exit"] == 0 for r in old), sum(r["exit"] == 0 for r in new),
                  sum(r["verdict"] == "pass" for r in old),
                  sum(r["verdict"] == "pass" for r in new)]
        print(f"{bar} {collection} {bar} {len(new)} {bar} " +
              f" {bar} ".join(map(str, counts)) + f" {bar}".rstrip())
    print()
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old and new and (old["verdict"], old["failing"]) == (new["verdict"], new["failing"]):
            continue
        if changed_only and old and new and old["verdict"] == new["verdict"]:
            continue
        gone = Counter(old["failing"] if old else []) - Counter(new["failing"] if new else [])
        came = Counter(new["failing"] if new else []) - Counter(old["failing"] if old else [])
        print(f"{'- ' if markdown else ''}{key[0]}: `{key[1]}`: "
              f"{old['verdict'] if old else 'absent'} -> {new['verdict'] if new else 'absent'}")
        states = new.get("states", {}) if new else {}
        for label, entries in (("gone", gone), ("new", came)):
            for entry in sorted(entries.elements()):
                finding = entry.rsplit(" ", 1)[0]
                now = states.get(finding, "") if label == "gone" else ""
                print(f"{'  - ' if markdown else '    '}{label}: {entry}"
                      + (f" (now {now})" if now else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the verdict of every run to this file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--verdicts-only", action="store_true",
                        help="--compare: list only the runs whose verdict changed")
    options = parser.parse_args()
    if options.compare:
        compare(*options.compare, options.markdown, options.verdicts_only)
    elif options.output:
        record(options.output)
    else:
        parser.error("give --output FILE or --compare BEFORE AFTER")


if __name__ == "__main__":
    main()
