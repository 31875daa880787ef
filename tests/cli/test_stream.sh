#!/usr/bin/env bash
# tarn init / stream / trim / offsets in a temporary TARN_HOME: the catalog's
# verbs, their --json output, usage errors and exit codes.
. "$(dirname "$0")/lib.sh"
tmp=$dir
export TARN_HOME="$tmp/home"
unset TARN_META TARN_WAL TARN_COMPACTED

# Before init: a clear message, no database created as a side effect.
expect_exit 1 "$TARN" stream list
grep -q "tarn init" "$tmp/err" || fail "no hint to run tarn init: $(cat "$tmp/err")"
[ ! -e "$TARN_HOME/meta.db" ] || fail "stream list created the metadata store"

expect_exit 0 "$TARN" init
[ -d "$TARN_HOME/wal" ] && [ -d "$TARN_HOME/compacted" ] && [ -f "$TARN_HOME/meta.db" ] ||
  fail "init did not create the deployment"
expect_exit 0 "$TARN" init --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["created"] is False, j
assert j["meta"].startswith("sqlite:") and j["wal"].startswith("file://"), j' "$tmp/out" ||
  fail "init --json"

# create: NAME alone is namespace default.
expect_exit 0 "$TARN" stream create orders --partitions 3 --property owner=team-a --property k=v
grep -q "default/orders" "$tmp/out" || fail "create output: $(cat "$tmp/out")"
expect_exit 0 "$TARN" stream create team/events --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["namespace"] == "team" and j["name"] == "events" and len(j["log_ids"]) == 1, j' \
  "$tmp/out" || fail "create --json"
expect_exit 1 "$TARN" stream create orders
grep -q "already exists" "$tmp/err" || fail "duplicate create message"

# LS-093, LS-094: '/' in a name; empty parts; bad counts: usage errors.
expect_exit 2 "$TARN" stream create a/b/c
expect_exit 2 "$TARN" stream create /x
expect_exit 2 "$TARN" stream create team/
expect_exit 2 "$TARN" stream create x --partitions 0
expect_exit 2 "$TARN" stream create x --partitions many
expect_exit 2 "$TARN" stream create x --property novalue
expect_exit 2 "$TARN" stream create
expect_exit 2 "$TARN" stream create x --frobnicate
expect_exit 2 "$TARN" stream nosuchverb

# list
expect_exit 0 "$TARN" stream list
grep -q "^default  *orders  *3  *active" "$tmp/out" || fail "list: $(cat "$tmp/out")"
expect_exit 0 "$TARN" stream list --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
names = sorted((s["namespace"], s["name"], len(s["log_ids"])) for s in j)
assert names == [("default", "orders", 3), ("team", "events", 1)], names
ids = [i for s in j for i in s["log_ids"]]
assert len(ids) == len(set(ids)), ids' "$tmp/out" || fail "list --json"

# describe: layout, properties, offsets per log.
expect_exit 0 "$TARN" stream describe default/orders --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["properties"] == {"owner": "team-a", "k": "v"}, j
assert [p["partition"] for p in j["partitions"]] == [0, 1, 2], j
assert [p["log_id"] for p in j["partitions"]] == j["log_ids"], j
for p in j["partitions"]:
    assert (p["first_offset"], p["end_offset"], p["trim_marker"]) == (0, 0, 0), p' \
  "$tmp/out" || fail "describe --json"
expect_exit 0 "$TARN" stream describe orders
grep -q "owner=team-a" "$tmp/out" || fail "describe text"
expect_exit 1 "$TARN" stream describe default/missing
grep -q "not found; list streams with 'tarn stream list'" "$tmp/err" || fail "not-found hint"

# add-partitions (LS-091): the old partitions keep their logs.
before=$("$TARN" stream describe orders --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["log_ids"])')
expect_exit 0 "$TARN" stream add-partitions orders --count 2 --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); b=eval(sys.argv[2])
assert j["log_ids"][:3] == b and len(j["log_ids"]) == 5 and len(set(j["log_ids"])) == 5, j' \
  "$tmp/out" "$before" || fail "add-partitions"
expect_exit 2 "$TARN" stream add-partitions orders
expect_exit 1 "$TARN" stream add-partitions nope --count 1

# trim: a partition must be named on a multi-partition stream; an empty log
# keeps B = 0 (nothing to trim), and the stored marker is what is printed.
expect_exit 2 "$TARN" trim orders --through 5
expect_exit 2 "$TARN" trim orders --partition 1
expect_exit 2 "$TARN" trim orders --through -1 --partition 1
expect_exit 2 "$TARN" trim orders --through 5 --partition 9
expect_exit 0 "$TARN" trim orders --through 5 --partition 1 --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["partition"] == 1 and j["through"] == 5 and j["trim_marker"] == 0, j' "$tmp/out" ||
  fail "trim --json"
expect_exit 0 "$TARN" trim team/events --through 3
grep -q "trim marker 0" "$tmp/out" || fail "trim text: $(cat "$tmp/out")"

# offsets
expect_exit 0 "$TARN" offsets orders --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert len(j["partitions"]) == 5 and all(p["end_offset"] == 0 for p in j["partitions"]), j' \
  "$tmp/out" || fail "offsets --json"
expect_exit 2 "$TARN" offsets
expect_exit 1 "$TARN" offsets nope

# drop (LS-089, LS-090): tombstoned, gone from the list, not creatable again.
expect_exit 0 "$TARN" stream drop team/events --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["existed"] is True, j' \
  "$tmp/out" || fail "drop --json"
expect_exit 0 "$TARN" stream list --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert [s["name"] for s in j] == ["orders"], j' "$tmp/out" || fail "list after drop"
expect_exit 1 "$TARN" stream create team/events
grep -q "dropped" "$tmp/err" || fail "create after drop message"
expect_exit 0 "$TARN" stream drop team/never-existed
grep -q "tombstoned" "$tmp/out" || fail "drop of an absent stream"
expect_exit 1 "$TARN" stream create team/never-existed
expect_exit 0 "$TARN" stream drop team/events # again: idempotent

# Deployment flags: --home, and a store that cannot be opened (exit 3).
expect_exit 0 "$TARN" init --home "$tmp/other"
expect_exit 0 "$TARN" stream list --home "$tmp/other" --json
[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/out")" = 0 ] ||
  fail "--home picks another deployment"
# init writes HOME/tarn.json; --home alone then finds a non-default store.
expect_exit 0 "$TARN" init --home "$tmp/third" --meta "sqlite:$tmp/third-meta.db" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["created"] is True and j["config"].endswith("/tarn.json"), j' "$tmp/out" || fail "init --json config"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["meta"] == "sqlite:" + sys.argv[2] + "/third-meta.db", j' "$tmp/third/tarn.json" "$tmp" ||
  fail "tarn.json content"
expect_exit 0 "$TARN" stream create --home "$tmp/third" only-here
expect_exit 0 "$TARN" stream describe only-here --home "$tmp/third"
[ ! -e "$tmp/third/meta.db" ] || fail "the default store was used despite tarn.json"
echo '{"meta": 3}' >"$tmp/third/tarn.json"
expect_exit 1 "$TARN" stream list --home "$tmp/third"
grep -q "tarn.json" "$tmp/err" || fail "bad tarn.json message"
expect_exit 3 "$TARN" stream list --meta "sqlite:$tmp"
grep -q "unreachable" "$tmp/err" || fail "unreachable message"
expect_exit 2 "$TARN" stream list --meta

# --help on every verb: exit 0, names its options.
for v in "init" "stream create" "stream list" "stream describe" "stream drop" \
         "stream add-partitions" "trim" "offsets"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$TARN" $v --help
  grep -q "^usage: tarn $v" "$tmp/out" || fail "$v --help"
  grep -q "Exit status" "$tmp/out" || fail "$v --help lacks exit status"
done
grep -q -- "--drain-timeout-ms" <("$TARN" stream drop --help) || fail "drop --help"
echo ok
