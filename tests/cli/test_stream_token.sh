#!/usr/bin/env bash
# Fencing tokens (issue 15 "Fencing tokens"; tarn/token.h, docs/express.md):
# the stream property token_mode (any|fenced), `tarn stream fence NS/NAME
# --token T` (CAS install, --json with the superseded token), the door of
# `tarn append --token T` (exact equality; exit 4 on a refusal), and a stale
# holder superseded while it streams: it stops reading, flushes what it read
# and exits 4.
. "$(dirname "$0")/lib.sh"
tmp=$dir
export TARN_HOME="$tmp/home"
unset TARN_META TARN_WAL TARN_COMPACTED
ap() { # STATUS STREAM LINE [ARGS]: one-shot append of LINE
  local want=$1 s=$2 l=$3; shift 3
  set +e; echo "$l" | "$TARN" append "$s" "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?; set -e
  [ "$got" = "$want" ] || fail "append $s $* exited $got, not $want: $(cat "$tmp/err")"
}

expect_exit 0 "$TARN" init
expect_exit 2 "$TARN" stream create bad --token-mode maybe
expect_exit 2 "$TARN" stream create bad --token x
expect_exit 2 "$TARN" stream fence nosuch
expect_exit 1 "$TARN" stream fence nosuch --token a
expect_exit 0 "$TARN" stream fence --help
grep -q -- "--token T" "$tmp/out" || fail "fence --help"
expect_exit 0 "$TARN" append --help
grep -q "4 the fencing token was refused" "$tmp/out" || fail "append --help exit 4"

for class in standard express; do
  f=f-$class c=c-$class
  expect_exit 0 "$TARN" stream create "$f" --class "$class" --token-mode fenced
  expect_exit 0 "$TARN" stream create "$c" --class "$class"
  expect_exit 0 "$TARN" stream describe "$f" --json
  grep -q '"token_mode": "fenced"' "$tmp/out" || fail "token_mode property: $(cat "$tmp/out")"
  # fenced: no token, or a token before any is installed, is refused
  ap 4 "$f" a
  grep -q "token mode fenced" "$tmp/err" || fail "fenced without token: $(cat "$tmp/err")"
  ap 4 "$f" a --token p1
  grep -q "no token installed" "$tmp/err" || fail "fenced, none installed: $(cat "$tmp/err")"
  expect_exit 0 "$TARN" stream fence "$f" --token p1 --json
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["token"] == "p1" and j["previous"] is None and j["mode"] == "fenced", j' "$tmp/out" ||
    fail "fence --json: $(cat "$tmp/out")"
  ap 0 "$f" a1 --token p1
  # exact equality: neither a prefix nor an extension passes
  ap 4 "$f" a --token p
  ap 4 "$f" a --token p12
  expect_exit 0 "$TARN" stream fence "$f" --token p2 --json
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["token"] == "p2" and j["previous"] == "p1", j' "$tmp/out" || fail "re-fence --json"
  ap 4 "$f" a --token p1
  grep -q "stale" "$tmp/err" || fail "stale token message: $(cat "$tmp/err")"
  ap 0 "$f" a2 --token p2
  # installing the token in place already is no change
  expect_exit 0 "$TARN" stream fence "$f" --token p2 --json
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["previous"] is None, j' \
    "$tmp/out" || fail "same-token fence"
  # any (cooperative): no token passes; a token passes until another is installed
  ap 0 "$c" b1
  ap 0 "$c" b2 --token q1
  expect_exit 0 "$TARN" stream fence "$c" --token q2
  ap 0 "$c" b3
  ap 4 "$c" b --token q1
  ap 0 "$c" b4 --token q2
  expect_exit 0 "$TARN" read "$f"
  [ "$(cat "$tmp/out")" = "$(printf 'a1\na2')" ] || fail "$f holds $(cat "$tmp/out")"
  expect_exit 0 "$TARN" read "$c"
  [ "$(cat "$tmp/out")" = "$(printf 'b1\nb2\nb3\nb4')" ] || fail "$c holds $(cat "$tmp/out")"

  # a streaming holder of p2 is superseded once p3 is installed
  mkfifo "$tmp/in-$class"
  "$TARN" append "$f" --token p2 --batch-ms 10 <"$tmp/in-$class" >"$tmp/sout" 2>"$tmp/serr" &
  pid=$!
  pids+=("$pid")
  exec 7>"$tmp/in-$class"
  echo s1 >&7
  for _ in $(seq 50); do [ -s "$tmp/sout" ] && break; sleep 0.1; done
  [ "$(cat "$tmp/sout")" = 2 ] || fail "streaming append: $(cat "$tmp/sout") $(cat "$tmp/serr")"
  expect_exit 0 "$TARN" stream fence "$f" --token p3
  start=$(date +%s)
  set +e
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; echo more >&7 2>/dev/null; sleep 0.1; done
  wait "$pid"; got=$?
  set -e
  exec 7>&-
  [ "$got" = 4 ] || fail "superseded holder exited $got, not 4: $(cat "$tmp/serr")"
  grep -q "superseded" "$tmp/serr" || fail "no superseded message: $(cat "$tmp/serr")"
  [ $(( $(date +%s) - start )) -le 4 ] || fail "the superseded holder took too long"
  # what it read before is appended and reported (none lost, none doubled)
  expect_exit 0 "$TARN" read "$f"
  n_out=$(grep -c . "$tmp/sout")
  [ "$(grep -c . "$tmp/out")" = $((2 + n_out)) ] ||
    fail "read $(grep -c . "$tmp/out") entries; acknowledged 2 + $n_out"
done
echo ok
