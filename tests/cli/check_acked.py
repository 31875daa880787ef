#!/usr/bin/env python3
"""The checker of tarn's promise, for CLI tests with real processes (issues 30, 31):
every offset `tarn append --json` acknowledged holds exactly the line sent for it,
no line is stored twice, nothing reported failed is stored, no offset was
acknowledged twice, and nothing is stored that no run sent.

    check_acked.py --read READ.jsonl --run INPUT APPEND.jsonl [--run INPUT APPEND.jsonl ...]

READ.jsonl is `tarn read NS/NAME [--partition P] --format json` of the log (one
object a line: offset, payload in hex). INPUT is what one `tarn append` read on
stdin (one record a line), APPEND.jsonl what it printed with --json (a line per
record: {"record","offset"} when acknowledged, {"record","status"} when not; a
run killed midway prints a prefix). Lines must be unique across all runs (the
test makes them so): a line is how a stored entry is traced to its run.

Exit status 0 when every check holds, 1 with one line per violation on stdout
(at most 20 of each kind, then a count), 2 for a bad command line or input.
"""
import argparse
import json
import sys
from collections import defaultdict


def load_jsonl(path):
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                out.append(json.loads(raw))
            except ValueError:
                # a run killed mid-line leaves a torn last line: not an acknowledgement
                print(f"check_acked: {path}:{n}: not JSON (a torn last line?), skipped",
                      file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--read", required=True)
    ap.add_argument("--run", nargs=2, action="append", default=[], metavar=("INPUT", "APPEND"))
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()

    sent = {}  # line -> (run, record)
    acked = {}  # (run, record) -> offset
    failed = set()  # (run, record) reported failed
    unknown = set()  # (run, record) of unknown outcome
    by_offset = defaultdict(list)  # acked offset -> [(run, record)]
    for r, (inp, app) in enumerate(a.run):
        with open(inp, "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for i, ln in enumerate(lines):
            if ln in sent:
                print(f"check_acked: line {ln!r} sent twice (run {sent[ln][0]} and {r}); "
                      "lines must be unique", file=sys.stderr)
                return 2
            sent[ln] = (r, i)
        for o in load_jsonl(app):
            if "record" not in o:
                continue  # the summary line
            k = (r, o["record"])
            if k[1] >= len(lines):
                print(f"check_acked: run {r} reports record {k[1]} of {len(lines)}", file=sys.stderr)
                return 2
            if "offset" in o:
                acked[k] = o["offset"]
                by_offset[o["offset"]].append(k)
            elif o.get("status") == "unknown":
                unknown.add(k)
            else:
                failed.add(k)

    stored = {}  # offset -> line
    where = defaultdict(list)  # line -> [offsets]
    for o in load_jsonl(a.read):
        if "payload" not in o:
            continue
        ln = bytes.fromhex(o["payload"])
        off = o["offset"]
        stored[off] = ln
        where[ln].append(off)

    line_of = {v: k for k, v in sent.items()}
    bad = defaultdict(list)
    for off, ks in sorted(by_offset.items()):
        if len(ks) > 1:
            bad["offset acknowledged twice"].append(
                f"offset {off} acknowledged to " + ", ".join(f"run {r} record {i}" for r, i in ks))
    for k, off in sorted(acked.items(), key=lambda kv: kv[1]):
        ln = line_of[k]
        if off not in stored:
            bad["acknowledged, not stored"].append(
                f"run {k[0]} record {k[1]} {ln!r}: acknowledged at {off}, no entry there")
        elif stored[off] != ln:
            bad["acknowledged, another line stored"].append(
                f"run {k[0]} record {k[1]} {ln!r}: acknowledged at {off}, "
                f"{stored[off]!r} stored there (that line at {where[ln] or 'nowhere'})")
    for ln, offs in where.items():
        if len(offs) > 1:
            bad["stored twice"].append(f"{ln!r} stored at offsets {offs}")
        if ln not in sent:
            bad["stored, never sent"].append(f"{ln!r} at offsets {offs}")
        elif sent[ln] in failed:
            r, i = sent[ln]
            bad["reported failed, stored"].append(f"run {r} record {i} {ln!r} at offsets {offs}")

    n_acked = len(acked)
    summary = (f"check_acked: {len(a.run)} runs, {len(sent)} lines sent, {n_acked} acknowledged, "
               f"{len(failed)} failed, {len(unknown)} unknown, {len(stored)} entries stored")
    if not bad:
        if not a.quiet:
            print(summary + ": ok")
        return 0
    print(summary + ": VIOLATIONS")
    for kind, items in bad.items():
        print(f"  {kind}: {len(items)}")
        for s in items[:20]:
            print(f"    {s}")
        if len(items) > 20:
            print(f"    ... {len(items) - 20} more")
    return 1


if __name__ == "__main__":
    sys.exit(main())
