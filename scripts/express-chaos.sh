#!/usr/bin/env bash
# Chaos rounds for express leadership (issue 30 acceptance; not in CI):
#   scripts/express-chaos.sh [sqlite|etcd] [ROUNDS] [SEED]
# Each round, on a fresh deployment (tests/cli/xlead_env.sh: the embedded
# default with session_timeout_ms=1000, or etcd + three radosgw buckets):
# writer A appends 600 lines; once it acknowledged 100, it is killed (-9),
# stopped past its session (SIGSTOP, SIGCONT after B), or left alone; writer
# B appends 300 lines as A's star (a second live process: must be refused),
# as the default star, or as another star; on sqlite, two of the three bucket
# directories may turn read-only for 2 s while B writes (chattr -R +i); a last
# writer F (default star) appends one line once A's session is surely over,
# so that its gate settles whatever A left. Then tests/cli/check_acked.py over
# every run of the round (every printed offset holds its line, nothing twice,
# nothing failed stored) and tarn fsck. A process that does not end in 90 s
# is a violation too. On sqlite a stopped A may hold the database's write
# lock: B then waits for it (a stall, counted apart), and A is continued
# after 20 s. Needs TARN (the tarn binary; default build/release/tarn)
# and, for etcd, `source /tmp/servers.env`. Prints one line per round and a
# summary; exit 1 when any round had a violation (its directory is kept under
# $TMPDIR/express-chaos-*).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-sqlite}
rounds=${2:-100}
RANDOM=${3:-$$}
export TARN=${TARN:-$here/build/release/tarn}
bad=0
stalls=0
for ((r = 1; r <= rounds; r++)); do
  act=$((RANDOM % 3))  # 0 kill -9, 1 stop past the session, 2 nothing
  bst=$((RANDOM % 3))  # 0 A's star, 1 the default star, 2 another star
  out=$((RANDOM % 2))  # 1: bucket outage (sqlite only)
  [ "$mode" = sqlite ] || out=0
  keep=$(mktemp -d "${TMPDIR:-/tmp}/express-chaos-XXXXXX")
  res=$(
    TARN_TEST_KEEP="$keep" TARN_TEST_STACKS=0 ACT=$act BST=$bst OUT=$out MODE=$mode bash -c '
      . "$0/tests/cli/lib.sh"
      . "$0/tests/cli/xlead_env.sh"
      xlead_deploy "$MODE"
      "$TARN" stream create fast/c --class express > /dev/null
      pace() { n=0; while IFS= read -r l; do echo "$l"; n=$((n + 1)); [ $((n % 20)) = 0 ] && sleep 0.02; done < "$1"; }
      i=0; while [ $i -lt 600 ]; do echo "a-$i"; i=$((i + 1)); done > "$dir/in.a"
      i=0; while [ $i -lt 300 ]; do echo "b-$i"; i=$((i + 1)); done > "$dir/in.b"
      echo f-0 > "$dir/in.f"
      pace "$dir/in.a" | "$TARN" append fast/c --star ca --json > "$dir/out.a" 2> "$dir/a.err" &
      a=$!; pids+=("$a")
      wait_until 30 eval "[ \"\$(acked $dir/out.a)\" -ge 100 ]" || fail "A: fewer than 100 acknowledged"
      case $ACT in
        0) kill -KILL "$a" ;;
        1) kill -STOP "$a"; sleep 3 ;;
      esac
      case $BST in
        0) bstar=(--star ca) ;;
        1) bstar=() ;;
        2) bstar=(--star cb) ;;
      esac
      pace "$dir/in.b" | "$TARN" append fast/c "${bstar[@]}" --json > "$dir/out.b" 2> "$dir/b.err" &
      b=$!; pids+=("$b")
      ro=("$TARN_HOME/express/a" "$TARN_HOME/express/b")
      if [ "$OUT" = 1 ]; then
        cleanup_hook() { chattr -R -i "${ro[@]}" 2> /dev/null || true; }
        sleep 0.5; chattr -R +i "${ro[@]}"; sleep 2; chattr -R -i "${ro[@]}"
      fi
      if [ "$ACT" = 1 ]; then
        # sqlite: a process stopped inside a write transaction holds the
        # database lock, and every other process waits for it (no lock is
        # broken; the store stalls, nothing is lost): A goes on after 20 s
        wait_until 20 eval "! kill -0 $b 2> /dev/null" || echo "stall: B waited for the stopped A"
        kill -CONT "$a"
      fi
      wait_until 90 eval "! kill -0 $b 2> /dev/null" || fail "B did not end in 90 s"
      wait_until 90 eval "! kill -0 $a 2> /dev/null" || fail "A did not end in 90 s"
      sleep 3 # past the session of a killed A
      timeout 90 "$TARN" append fast/c --json < "$dir/in.f" > "$dir/out.f" 2> "$dir/f.err" || true
      xlead_check fast/c "$dir/in.a" "$dir/out.a" "$dir/in.b" "$dir/out.b" "$dir/in.f" "$dir/out.f" | tail -1
    ' "$here" 2>&1
  )
  st=$?
  line=$(echo "$res" | grep -E "^(check_acked|FAIL)" | tail -1)
  echo "$res" | grep -q "^stall:" && stalls=$((stalls + 1)) && line="(stalled on the stopped A's sqlite lock) $line"
  if [ $st = 0 ] && echo "$line" | grep -q ": ok$"; then
    rm -rf "$keep"
    echo "round $r act=$act b=$bst outage=$out: $line"
  else
    bad=$((bad + 1))
    echo "round $r act=$act b=$bst outage=$out: VIOLATION (exit $st; kept $keep): $line"
    echo "$res" | grep -v "^ *\(echo\|done\|n=\|\[ \)" | head -30 | sed 's/^/    /'
  fi
done
echo "express-chaos: mode=$mode rounds=$rounds violations=$bad stalls=$stalls date=$(date -u +%FT%TZ) commit=$(git -C "$here" rev-parse --short HEAD)"
[ $bad = 0 ]
