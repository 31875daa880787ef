#!/usr/bin/env bash
# The command-line conventions every verb shares (src/cli/cli_options.c,
# docs/cli.md): --help exits 0 with the usage; an unknown option, a missing or
# bad value exit 2 naming the option and pointing to --help; a value option
# takes "--opt VALUE" and "--opt=VALUE"; an option given twice keeps the last
# value.
. "$(dirname "$0")/lib.sh"
tmp=$dir
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
cd "$tmp"
# run ARGS...: runs tarn; $rc, $tmp/out, $tmp/err
run() { rc=0; "$TARN" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?; }
ok() { run "$@"; [ "$rc" = 0 ] || fail "tarn $*: exit $rc: $(cat "$tmp/err")"; }
# usage_error NEEDLE ARGS...: exit 2, one message naming NEEDLE, a pointer to --help
usage_error() {
  local needle=$1
  shift
  run "$@"
  [ "$rc" = 2 ] || fail "tarn $*: exit $rc, want 2"
  grep -qF -- "$needle" "$tmp/err" || fail "tarn $*: stderr does not name '$needle': $(cat "$tmp/err")"
  grep -qF -- "--help' for usage" "$tmp/err" || fail "tarn $*: no pointer to --help: $(cat "$tmp/err")"
}

# Every verb, and one of its value options (- where it has none).
verbs=(
  "append|--batch-ms" "read|--from" "init|--home" "stream create|--partitions"
  "stream list|--meta" "stream describe|--wal" "stream drop|--drain-timeout-ms"
  "stream add-partitions|--count" "trim|--through" "offsets|--compacted" "fsck|--home"
  "serve|--listen" "compact|--max-range-bytes" "gc|--wal-grace-ms" "tasks|--retry"
  "inspect wal|-" "inspect key|-" "inspect index|--hex" "inspect offsets|--boundaries"
  "inspect fileindex|--start" "inspect companion|--lookup" "inspect kafka|--offset"
  "inspect parquet|--rows" "topic create|--partitions" "topic list|--meta"
  "topic describe|--wal" "topic delete|--drain-timeout-ms" "topic add-partitions|--partitions")
for entry in "${verbs[@]}"; do
  verb=${entry%|*} opt=${entry#*|}
  read -ra w <<< "$verb"
  for h in --help -h; do
    ok "${w[@]}" $h
    head -1 "$tmp/out" | grepq "^usage: tarn $verb " || fail "tarn $verb $h: $(head -1 "$tmp/out")"
    [ ! -s "$tmp/err" ] || fail "tarn $verb $h wrote to stderr"
  done
  usage_error "unknown option '--no-such-option'" "${w[@]}" --no-such-option
  usage_error "unknown option '-q'" "${w[@]}" -q
  if [ "$opt" != - ]; then
    usage_error "$opt needs" "${w[@]}" "$opt"
  fi
done

# Numbers out of range or not numbers, in both forms: the option and the value named.
for spec in "trim x|--through" "stream create x|--partitions" "stream add-partitions x|--count" \
  "read x|--count" "read x|--timeout-ms" "append x|--max-object-bytes" "compact x|--rate" \
  "gc|--orphan-grace-ms" "tasks|--retry" "serve|--compact-workers" "serve|--wal-grace-ms" \
  "inspect fileindex QQ==|--start" "inspect kafka f|--records"; do
  read -ra w <<< "${spec%|*}"
  opt=${spec#*|}
  usage_error "$opt needs" "${w[@]}" "$opt" nine
  grep -qF "not 'nine'" "$tmp/err" || fail "$spec: the value is not named: $(cat "$tmp/err")"
  usage_error "$opt needs" "${w[@]}" "$opt=-1"
  grep -qF "not '-1'" "$tmp/err" || fail "$spec=: the value is not named: $(cat "$tmp/err")"
done
usage_error "--partitions needs a number from 1 to 65536, not '0'" stream create x --partitions 0
usage_error "--compact-workers needs a number from 0 to 64, not '65'" serve --compact-workers=65
usage_error "--format needs raw, hex, json or kafka, not 'xml'" read x --format=xml
usage_error "--log-level needs debug, info, warn or error, not 'loud'" serve --log-level loud
usage_error "--property needs KEY=VALUE, not 'novalue'" stream create x --property=novalue
# positional arguments: one too many is named
usage_error "unexpected argument 'extra'" fsck extra
usage_error "unexpected argument 'b'" offsets a b
usage_error "unexpected argument 'b'" read a b
usage_error "unexpected argument 'x'" inspect offsets x

# Both forms, and the last of two wins, on a real deployment.
h=$tmp/h
ok init --home="$h" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["created"] and j["config"].startswith(sys.argv[2]), j' "$tmp/out" "$h"
ok init --home "$h" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert not j["created"], j' "$tmp/out"
ok stream list --home=/nonexistent/x --home "$h" --json # last wins
nlogs() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["log_ids"]))' "$tmp/out"; }
ok stream create t/a --home="$h" --partitions=2 --json
[ "$(nlogs)" = 2 ] || fail "--partitions=2"
ok stream create t/b --home "$h" --partitions 2 --partitions 3 --json
[ "$(nlogs)" = 3 ] || fail "--partitions 2 --partitions 3: $(nlogs) partitions, want 3 (the last)"
ok stream add-partitions t/b --home="$h" --count=1 --json
[ "$(nlogs)" = 4 ] || fail "--count=1"
ok stream create t/p --home "$h" --property=k=1 --property k2=2 --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["properties"] == {"k": "1", "k2": "2"}, j' "$tmp/out"

printf 'r0\nr1\nr2\n' > "$tmp/in"
run append t/a --home="$h" --partition=1 --batch-ms=0 < "$tmp/in"
[ "$rc" = 0 ] && [ "$(tr '\n' ' ' < "$tmp/out")" = "0 1 2 " ] || fail "append --opt=V: $(cat "$tmp/out" "$tmp/err")"
run append t/a --home "$h" --partition 1 --batch-ms 0 < "$tmp/in"
[ "$rc" = 0 ] && [ "$(tr '\n' ' ' < "$tmp/out")" = "3 4 5 " ] || fail "append --opt V: $(cat "$tmp/out" "$tmp/err")"
ok read t/a --home="$h" --partition=1 --from=1 --count=2 --format=hex
[ "$(cut -d' ' -f1 "$tmp/out" | tr '\n' ' ')" = "1 2 " ] || fail "read --opt=V: $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/eq"
ok read t/a --home "$h" --partition 1 --from 1 --count 2 --format hex
cmp -s "$tmp/out" "$tmp/eq" || fail "read: the two forms differ"
ok read t/a --home "$h" --partition 1 --count 5 --count 1 --format json --format raw
[ "$(cat "$tmp/out")" = r0 ] || fail "read: the last --count/--format should win: $(cat "$tmp/out")"

ok trim t/a --home="$h" --partition=1 --through=0 --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["trim_marker"] == 1, j' "$tmp/out"
ok trim t/a --home "$h" --partition 1 --through 1 --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["trim_marker"] == 2, j' "$tmp/out"
ok offsets t/a --home="$h" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); p=j["partitions"][1]; assert p["end_offset"] == 6 and p["trim_marker"] == 2, j' "$tmp/out"
ok compact t/a --home="$h" --partition=1 --max-range-bytes=1000000 --json
ok fsck --home="$h" --no-read --quiet
ok gc --home "$h" --dry-run --wal-grace-ms=600000 --orphan-grace-ms 0 --json
ok tasks --home="$h" --json
ok stream drop t/p --home="$h" --drain-timeout-ms=0 --json
ok inspect offsets --boundaries=0,3,5
cp "$tmp/out" "$tmp/eq"
ok inspect offsets --boundaries 0,3,5
cmp -s "$tmp/out" "$tmp/eq" || fail "inspect offsets: the two forms differ"
echo "ok"
