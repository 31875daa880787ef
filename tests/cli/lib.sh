# The plumbing every tests/cli/test_*.sh shares (issue #18), sourced first:
#   . "$(dirname "$0")/lib.sh"
# It sets strict mode and requires TARN (the tarn command under test), and gives:
#   dir            a temporary directory, removed at exit
#   pids           an array: every pid a test appends is killed (SIGKILL) at exit
#   cleanup_hook   if the test defines this function, it runs at exit after the
#                  pids are killed and before $dir goes (e.g. to delete S3 buckets)
#   fail MSG       prints "FAIL: MSG" and the last 50 lines of each file matching
#                  the globs in fail_logs (default: $dir/log, $dir/log.*, $dir/*.err,
#                  $dir/out*, $dir/err*; expanded when fail runs), exits 1
#   skip WHY       prints "SKIP: WHY", exits 77 (ctest's SKIP_RETURN_CODE)
#   need_env VAR...   skips unless every VAR is set and not empty; in CI (CI=true
#                  or 1) a missing server is a failure instead: CI must start them
#   need_tool CMD...  skips unless every CMD is on PATH
#   require_tool CMD...  fails unless every CMD is on PATH (a dependency the
#                  project installs, scripts/install-deps.sh, so never a skip)
#   unique_run     sets run to a prefix no other run uses: etcd and the bucket keep
#                  what earlier runs wrote, so a run's deployment is its own
#   grepq ARGS...  `grep -q` for the end of a pipeline (reads all its input)
#   expect_exit STATUS CMD...  runs CMD with its stdout in $dir/out and its stderr
#                  in $dir/err (kept for the checks after it); fails unless it
#                  exits STATUS
#   wait_until S CMD...  runs CMD every 50 ms until it succeeds (0) or S seconds
#                  passed (1)
#   serve_start LOG ARGS...  starts `$TARN serve ARGS` in the background with its
#                  stderr in LOG; appends its pid to pids and sets pid; waits up to
#                  10 s for the "serving" line (logged once every listener is up)
#                  and sets port (HTTP) and kport (Kafka; empty without one) from it
#   http_port LOG, kafka_port LOG  print those ports from LOG's "serving" line
#   stop_term PID  SIGTERM, wait, fails unless PID exits 0
#   proxy_start HOST:PORT [ARGS]  starts tests/support/faultproxy.py in front of
#                  HOST:PORT; sets pport (its port) and cport (its control port)
#   ctl WORDS...   one command to that proxy (a rule, clear, stats); prints its
#                  answer, fails on an error; faults: how many it injected
#   TARN_TEST_KEEP=DIR  keeps a copy of the test directory (its logs) in DIR
set -euo pipefail
: "${TARN:?}"
dir=$(mktemp -d)
pids=()
fail_logs=("$dir/log" "$dir/log.*" "$dir/*.err" "$dir/out*" "$dir/err*")

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  if declare -F cleanup_hook > /dev/null; then cleanup_hook || true; fi
  # TARN_TEST_KEEP=DIR keeps a copy of the test's directory (logs) there
  if [ -n "${TARN_TEST_KEEP:-}" ]; then cp -r "$dir" "$TARN_TEST_KEEP" 2> /dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local g f p
  # a sanitizer's report whole, first: the tails below cut its top (where it
  # read, freed and allocated), and CI shows only the end of a test's output
  for g in "${fail_logs[@]}"; do
    for f in $g; do
      [ -f "$f" ] && grepq -a -E '^==[0-9]+==ERROR: |^WARNING: ThreadSanitizer|runtime error: ' "$f" || continue
      echo "== sanitizer report in $f" >&2
      awk '/^==[0-9]+==ERROR: |^WARNING: ThreadSanitizer|runtime error: /{on=1} on{print; if (++n >= 400) exit}
           /^SUMMARY: /{on=0}' "$f" >&2
    done
  done
  for g in "${fail_logs[@]}"; do
    for f in $g; do [ -f "$f" ] && { echo "== $f" >&2; tail -50 "$f" >&2; }; done
  done
  # a hang is diagnosed by where each live `tarn serve` waits (gdb, when
  # installed; TARN_TEST_STACKS=0 turns it off)
  if [ "${TARN_TEST_STACKS:-1}" != 0 ] && command -v gdb > /dev/null; then
    for p in "${pids[@]}"; do
      [ "$(cat "/proc/$p/comm" 2> /dev/null)" = tarn ] || continue
      echo "== threads of tarn pid $p" >&2
      timeout 30 gdb -p "$p" -batch -nx -ex 'thread apply all bt' 2>&1 |
        grep -E '^(Thread|#)' | grep -v '^#.* in ?? ' | head -300 >&2 || true
    done
  fi
  exit 1
}

skip() {
  echo "SKIP: $*"
  exit 77
}

need_env() {
  local v missing=()
  for v in "$@"; do [ -n "${!v:-}" ] || missing+=("$v"); done
  [ ${#missing[@]} = 0 ] && return 0
  local names
  names=$(printf ' / %s' "${missing[@]}")
  names=${names:3}
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "FAIL: $names not set: CI must start the servers" >&2
    exit 1
  fi
  skip "$names not set"
}

need_tool() {
  local t
  for t in "$@"; do command -v "$t" > /dev/null || skip "$t missing (scripts/install-deps.sh)"; done
}

require_tool() {
  local t
  for t in "$@"; do
    command -v "$t" > /dev/null || { echo "$t is not installed (scripts/install-deps.sh)" >&2; exit 1; }
  done
}

unique_run() { run=$(date +%s%N)-$$; }

# grepq ARGS...: grep -q that reads its whole input. Under pipefail `CMD | grep -q`
# fails when grep matches, exits, and CMD's next write meets the closed pipe
# (SIGPIPE, status 141): a match reported as a miss, now and then
grepq() { grep "$@" > /dev/null; }

expect_exit() {
  local want=$1; shift
  set +e; "$@" >"$dir/out" 2>"$dir/err"; local got=$?; set -e
  [ "$got" = "$want" ] || fail "$* exited $got, not $want: $(cat "$dir/err")"
}

wait_until() {
  local n=$(($1 * 20)) i
  shift
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

# The "serving" line in text (port=N) and JSON ("port": "N") log formats.
http_port() { grep -a 'serving' "$1" | grep -a -o ' port=[0-9]*\|"port": *"[0-9]*' | grep -o '[0-9]*$' | head -1 || true; }
kafka_port() { grep -a 'serving' "$1" | grep -a -o 'kafka_port=[0-9]*\|"kafka_port": *"[0-9]*' | grep -o '[0-9]*$' | head -1 || true; }

serve_start() {
  local log=$1
  shift
  # Emptied here, not only by the background child's redirection: the child
  # truncates after the fork, so a first check could still read the serving
  # line of an earlier node logged to the same file (a restart), and the port
  # read after it would find the file empty (CI met it in test_kafka_groups).
  : > "$log"
  "$TARN" serve "$@" 2> "$log" &
  pid=$!
  pids+=("$pid")
  # a node that could not start has exited: no use waiting the 10 s for it
  wait_until 10 eval '[ -n "$(http_port "$log")" ] || ! kill -0 "$pid" 2> /dev/null' || true
  port=$(http_port "$log")
  [ -n "$port" ] || fail "tarn serve logged no serving line in $log"
  kport=$(kafka_port "$log")
}

stop_term() {
  local rc=0
  # a node that already died (a sanitizer's abort, a crash) fails here with
  # its status and the logs, not silently through set -e
  if ! kill -TERM "$1" 2> /dev/null; then
    wait "$1" || rc=$?
    fail "pid $1 had exited (status $rc) before SIGTERM"
  fi
  wait "$1" || rc=$?
  [ "$rc" = 0 ] || fail "exit status $rc after SIGTERM"
}

# The fault-injecting proxy (tests/support/faultproxy.py, issue 31) before
# UPSTREAM (HOST:PORT); more arguments go to it (--verbose: every request
# logged in $dir/proxy.err). Sets pport (where tarn connects) and cport (its
# control port).
proxy_start() {
  local up=$1
  shift
  python3 "${TARN_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/support/faultproxy.py" \
    --upstream "$up" --ports "$dir/ports" "$@" 2> "$dir/proxy.err" &
  pids+=($!)
  wait_until 10 test -s "$dir/ports" || fail "the proxy did not start: $(cat "$dir/proxy.err")"
  read -r pport cport < "$dir/ports"
}
# One command to the proxy's control port (bash's /dev/tcp: a python3 per
# command costs seconds on a loaded machine); prints its answer.
ctl() {
  local out
  exec 3<> "/dev/tcp/127.0.0.1/$cport"
  echo "$*" >&3
  out=$(cat <&3)
  exec 3>&-
  case $out in error*) fail "proxy: $*: $out" ;; esac
  echo "$out"
}
# How many faults the proxy has injected so far.
faults() { ctl stats | grep -o '"faults": [0-9]*' | grep -o '[0-9]*$'; }
# One `tarn append ns/s --batch-ms 0 --json` fed K (default 4) lines NAME-N-I
# 0.3 s apart, so each is a batch (a WAL object) of its own and the requests
# after the first go on a pooled connection; input and output in $dir/in.N and
# $dir/out.N (N counts the calls in n), added to runs for check_acked.py.
append_slowly() {
  local name=$1 k=${2:-4} i
  n=$((n + 1))
  for i in $(seq "$k"); do echo "$name-$n-$i"; done > "$dir/in.$n"
  (for i in $(seq "$k"); do echo "$name-$n-$i"; sleep 0.3; done) |
    "$TARN" append ns/s --batch-ms 0 --json > "$dir/out.$n" 2> "$dir/err.$n" || true
  runs+=(--run "$dir/in.$n" "$dir/out.$n")
}
# Skips (77) where chattr +i does not make a directory read-only (not ext4 or
# xfs, or no CAP_LINUX_IMMUTABLE): the bucket outages of the express tests.
need_chattr_ro() {
  local probe="$dir/chattr-probe"
  mkdir "$probe"
  if ! chattr +i "$probe" 2> /dev/null || touch "$probe/x" 2> /dev/null; then
    chattr -i "$probe" 2> /dev/null || true
    skip "chattr +i does not make a directory read-only here"
  fi
  chattr -i "$probe"
}
