#!/usr/bin/env bash
# The Debian package as a user gets it (issue 18): cpack -G DEB builds it from
# this build tree; unpacked into a temporary root (dpkg -x), it alone builds
# and runs every docs/examples program with `pkg-config --cflags --libs tarn`
# (and one with CMake's find_package(tarn)); libtarn.so exports tarn_* and
# nothing else, has a soname and does not link libmicrohttpd; `man tarn-append`
# shows the page generated from --help; `tarn --version` and tarn_version()
# agree with the headers' TARN_VERSION_STRING; the systemd unit is packaged.
. "$(dirname "$0")/lib.sh"
: "${TARN_SRC:?}"
build=$(cd "$(dirname "$TARN")" && pwd)
need_tool cpack dpkg-deb dpkg-shlibdeps pkg-config man cc
require_tool kcat

# A sanitizer build's library needs its runtime first in every program: not a
# package anyone installs. The release build's run of this test is the one.
if objdump -p "$build/libtarn.so" | grep NEEDED | grep -E 'lib(asan|tsan|ubsan)' >/dev/null; then
  skip "a sanitizer build"
fi

(cd "$dir" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$dir/out" >"$dir/cpack.log" 2>&1) ||
  { cat "$dir/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$dir"/out/*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no .deb in $dir/out"
dpkg-deb -f "$deb" Package Version Depends > "$dir/control"
grep -q '^Package: tarn$' "$dir/control" || fail "package name: $(cat "$dir/control")"
grep -q '^Depends:.*libcurl' "$dir/control" || fail "Depends (dpkg-shlibdeps) lacks libcurl: $(cat "$dir/control")"
dpkg-deb -c "$deb" > "$dir/contents"
for f in ./usr/bin/tarn ./usr/include/tarn/tarn.h ./usr/include/tarn/version.h \
         ./usr/lib/libtarn.a ./usr/lib/pkgconfig/tarn.pc ./usr/lib/cmake/tarn/tarnConfig.cmake \
         ./usr/share/man/man1/tarn.1 ./usr/share/man/man1/tarn-append.1 \
         ./usr/lib/systemd/system/tarn-serve.service ./usr/share/doc/tarn/examples/append_read.c; do
  grep -q " $f\$" "$dir/contents" || fail "the package lacks $f"
done
grep -q ' ./usr/lib/libtarn.so.0 -> ' "$dir/contents" || fail "no soname link libtarn.so.0"
! grep -q "testing.h" "$dir/contents" || fail "tarn/testing.h (the test hooks) is installed"

root=$dir/root
dpkg-deb -x "$deb" "$root"
lib=$root/usr/lib

# Only the public API is exported (not tarn__*, not protobuf-c's symbols).
nm -D --defined-only "$lib/libtarn.so" | awk '{print $3}' > "$dir/exports"
[ -s "$dir/exports" ] || fail "libtarn.so exports nothing"
if grep -v '^tarn_[^_]' "$dir/exports" > "$dir/stray"; then
  fail "libtarn.so exports non-API symbols: $(head -5 "$dir/stray" | tr '\n' ' ')"
fi
grep -qx tarn_writer_open "$dir/exports" || fail "tarn_writer_open not exported"
objdump -p "$lib/libtarn.so" | grep 'SONAME *libtarn.so.0' >/dev/null || fail "soname is not libtarn.so.0"
if objdump -p "$lib/libtarn.so" | grep NEEDED | grep microhttpd >/dev/null; then
  fail "libtarn.so links libmicrohttpd (only the command should)"
fi

export PKG_CONFIG_PATH=$lib/pkgconfig
pkg-config --exists tarn || fail "pkg-config does not find tarn in the unpacked package"
cflags=$(pkg-config --cflags tarn)
case "$cflags" in *"-I$root/"*) ;; *) fail "tarn.pc's Cflags do not follow the package root: $cflags" ;; esac
hversion=$(sed -n 's/^#define TARN_VERSION_STRING "\(.*\)"$/\1/p' "$root/usr/include/tarn/version.h")
[ -n "$hversion" ] || fail "no TARN_VERSION_STRING in tarn/version.h"
[ "$(pkg-config --modversion tarn)" = "$hversion" ] || fail "tarn.pc version != header version"

# Each example, with pkg-config alone; run against the package's libtarn.so.
export LD_LIBRARY_PATH=$lib
for ex in append_read tail compact kafka_node; do
  cc -std=c11 -Wall -Wextra -Werror "$root/usr/share/doc/tarn/examples/$ex.c" \
     $(pkg-config --cflags --libs tarn) -o "$dir/$ex" || fail "building $ex against the package"
  ldd "$dir/$ex" | grep "$lib/libtarn.so.0" >/dev/null || fail "$ex is not linked against the package's libtarn.so"
done
home=$dir/home
"$dir/append_read" "$home" > "$dir/ar.out" || { cat "$dir/ar.out"; fail "append_read"; }
grep -q "^libtarn $hversion\$" "$dir/ar.out" || fail "tarn_version() != the header's version"
grep -q '^read offset 2: libtarn$' "$dir/ar.out" || fail "append_read did not read its records back: $(cat "$dir/ar.out")"
"$dir/tail" "$home" greetings 1 > "$dir/tail.out" || fail "tail"
[ "$(cut -f2 "$dir/tail.out" | tr '\n' ' ')" = "hello from libtarn " ] || fail "tail printed: $(cat "$dir/tail.out")"
"$dir/compact" "$home" greetings > "$dir/compact.out" || { cat "$dir/compact.out"; fail "compact"; }
grep -q 'partition 0: offsets \[0, 3) -> 1 Parquet file' "$dir/compact.out" || fail "compact printed: $(cat "$dir/compact.out")"
# docs/examples/kafka_node.c (issue 32 item 2): libtarn.so alone runs a Kafka
# node. A real client (kcat) creates a topic through it (Metadata with
# auto-create), produces three records and consumes them back; SIGTERM stops
# the node cleanly (exit 0 after "stopped").
"$dir/kafka_node" "$dir/home3" 127.0.0.1:0 > "$dir/kn.out" 2> "$dir/kn.err" &
pids+=($!)
kn=$!
wait_until 10 grepq 'listening on port' "$dir/kn.out" || fail "kafka_node did not start: $(cat "$dir/kn.err")"
knport=$(sed -n 's/.* listening on port \([0-9]*\)$/\1/p' "$dir/kn.out")
printf 'k1\nk2\nk3\n' | timeout 20 kcat -b "127.0.0.1:$knport" -P -t example 2> "$dir/kcat.err" ||
  fail "kcat produce through kafka_node: $(cat "$dir/kcat.err")"
timeout 20 kcat -b "127.0.0.1:$knport" -C -t example -o beginning -e > "$dir/kn.got" 2> "$dir/kcat.err" ||
  fail "kcat consume through kafka_node: $(cat "$dir/kcat.err")"
[ "$(tr '\n' ' ' < "$dir/kn.got")" = "k1 k2 k3 " ] || fail "kafka_node gave back: $(cat "$dir/kn.got")"
kill -TERM "$kn"
knrc=0
wait "$kn" || knrc=$?
[ $knrc = 0 ] && grepq '^stopped$' "$dir/kn.out" || fail "kafka_node on SIGTERM: exit $knrc, $(cat "$dir/kn.err")"
# After compaction the records read the same (now from Parquet), through the packaged command too.
"$root/usr/bin/tarn" read greetings --home "$home" > "$dir/read.out"
[ "$(tr '\n' ' ' < "$dir/read.out")" = "hello from libtarn " ] || fail "tarn read after compact: $(cat "$dir/read.out")"

# The packaged command: its version is the library's.
"$root/usr/bin/tarn" --version | grep "^tarn $hversion " >/dev/null || fail "tarn --version: $("$root/usr/bin/tarn" --version)"

# CMake's find_package(tarn) and the imported target tarn::tarn.
mkdir -p "$dir/cm"
cat > "$dir/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(uses_tarn C)
find_package(tarn $hversion REQUIRED)
add_executable(append_read $root/usr/share/doc/tarn/examples/append_read.c)
target_link_libraries(append_read PRIVATE tarn::tarn)
CM
cmake -S "$dir/cm" -B "$dir/cm/b" -DCMAKE_PREFIX_PATH="$root/usr" >"$dir/cm.log" 2>&1 &&
  cmake --build "$dir/cm/b" >>"$dir/cm.log" 2>&1 || { cat "$dir/cm.log"; fail "find_package(tarn)"; }
"$dir/cm/b/append_read" "$dir/home2" | grep '^3 entries read$' >/dev/null || fail "the find_package build does not run"

# man tarn-append: the page generated from `tarn append --help`.
MANPATH=$root/usr/share/man man -P cat tarn-append > "$dir/man.out" 2>/dev/null || fail "man tarn-append"
grep -q -- '--length-delimited' "$dir/man.out" || fail "man tarn-append lacks the options of --help"
"$TARN" append --help | grep -- '--batch-ms N' > "$dir/help.line"
grep -qF -- "$(sed 's/^ *//' "$dir/help.line")" "$dir/man.out" || fail "man page and --help differ"
for verb in $("$TARN" --help | awk '/^Commands:$/{on=1;next} on&&/^$/{on=0} on&&/^  [a-z]/{print $1}'); do
  [ "$verb" = version ] && continue
  [ -f "$root/usr/share/man/man1/tarn-$verb.1" ] || fail "no man page for tarn $verb"
done
echo "ok: $(basename "$deb"), $(wc -l < "$dir/exports") exported symbols"
