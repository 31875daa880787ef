#!/usr/bin/env bash
# Express streams on the embedded default (issue 14 acceptance): tarn init
# records three file:// directories as the express bucket set (W=2, WIN=8);
# tarn stream create --class express; tarn append acknowledges through the
# express writer (same output); tarn read reads the entries back after absorb;
# tarn express fence|settle take the stream's name (the star its writer
# recorded) as well as --star, and refuse neither or both; plain tarn fsck
# checks the express epochs and their absorbed ranges.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
for b in a b c; do [ -d "$TARN_HOME/express/$b" ] || fail "bucket directory $b"; done

"$TARN" stream create fast/x --class express > /dev/null
desc=$("$TARN" stream describe fast/x)
case "$desc" in *class=express*) ;; *) fail "class property: $desc" ;; esac
"$TARN" stream create slow/y > /dev/null
if "$TARN" stream create bad/z --class turbo 2> "$dir/err"; then fail "unknown class accepted"; fi

out=$(printf 'alpha\nbeta\n\ngamma\n' | TARN_STAR=node-a "$TARN" append fast/x)
[ "$out" = "$(printf '0\n1\n2\n3')" ] || fail "offsets: $out"
[ "$("$TARN" read fast/x)" = "$(printf 'alpha\nbeta\n\ngamma')" ] || fail "read back"
# a second process mints a new epoch and continues at the log's end
out=$(printf 'delta\n' | "$TARN" append fast/x --star node-a --json)
case "$out" in *'"offset":4'*) ;; *) fail "second append: $out" ;; esac
[ "$("$TARN" read fast/x --from 4)" = "delta" ] || fail "read second"
# the flights went into all three buckets under the star's epochs 1 and 2,
# and a closing writer deleted them once absorbed (below the checkpoint)
for b in a b c; do
  [ -d "$TARN_HOME/express/$b/node-a/00000000000000000002" ] || fail "no epoch 2 in bucket $b"
  [ -z "$(find "$TARN_HOME/express/$b" -type f)" ] || fail "flights left in bucket $b"
done
# fence and settle by the stream's name: the star is the one that wrote it
out=$("$TARN" express fence fast/x --json)
case "$out" in *'"star": "node-a"'*'"epoch": 2'*) ;; *) fail "fence NS/NAME: $out" ;; esac
out=$("$TARN" express settle fast/x --json)
case "$out" in *'"star": "node-a"'*'"poison_kept"'*) ;; *) fail "settle NS/NAME: $out" ;; esac
[ "$("$TARN" express fence --star node-a)" = "node-a/2: cut 1 (already fenced)" ] || fail "--star"
st=0; "$TARN" express fence 2> /dev/null || st=$?
[ "$st" = 2 ] || fail "neither NS/NAME nor --star: exit $st"
st=0; "$TARN" express settle fast/x --star node-a 2> /dev/null || st=$?
[ "$st" = 2 ] || fail "both NS/NAME and --star: exit $st"
st=0; "$TARN" express fence slow/y 2> "$dir/err" || st=$?
[ "$st" = 1 ] && grep -q "not an express stream" "$dir/err" || fail "standard stream fenced: $st"
# standard streams are unchanged: nothing goes to the express buckets
printf 'one\n' | TARN_STAR=node-b "$TARN" append slow/y > /dev/null
[ "$("$TARN" read slow/y)" = "one" ] || fail "standard stream"
[ ! -e "$TARN_HOME/express/a/node-b" ] || fail "standard append wrote a slot"
# plain fsck checks node-a's epochs and the absorbed ranges against the index
out=$("$TARN" fsck --no-read) || fail "fsck exit $?: $out"
echo ok
