#!/usr/bin/env bash
# scripts/manpages.sh TARN OUTDIR — writes tarn(1), tarn-VERB(1) and
# tarn-VERB-SUB(1) into OUTDIR from the command's own --help text, so that a
# man page and --help can never say different things (the build runs this
# after linking tarn; cmake --install puts the pages under share/man/man1).
# A help text is plain text: a "usage:" line, paragraphs, and sections headed
# by a line ending in ':' at the left margin ("Options:", "Commands:"). Each
# section becomes .SH, its body is kept as laid out (.nf), so columns of
# options line up as they do on a terminal.
set -euo pipefail
tarn=$1
out=$2
mkdir -p "$out"
version=$("$tarn" --version | sed -n '1s/^tarn \([^ ]*\).*/\1/p')

# roff escapes: backslashes, and a leading . or ' would be a request.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

# page NAME SUMMARY HELPFILE
page() {
  local name=$1 summary=$2 help=$3 upper
  upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
  {
    printf '.TH "%s" 1 "" "tarn %s" "tarn manual"\n' "$upper" "$version"
    printf '.SH NAME\n%s \\- %s\n' "$name" "$(printf '%s' "$summary" | esc)"
    printf '.SH SYNOPSIS\n.nf\n'
    sed -n 's/^usage: //p' "$help" | esc
    printf '.fi\n.SH DESCRIPTION\n.nf\n'
    # Everything after the usage line(s); section headers become .SH.
    # Everything after the usage line(s); section headers become .SH, text
    # lines are escaped (backslashes; a leading . or ' would be a request).
    awk 'BEGIN { body = 0 }
         /^usage: / { next }
         /^$/ && !body { next }
         { body = 1 }
         /^[A-Z][A-Za-z ()\/,-]*:$/ { sub(/:$/, ""); print ".fi"; print ".SH " toupper($0); print ".nf"; next }
         { gsub(/\\/, "\\e"); if ($0 ~ /^[.\047]/) $0 = "\\&" $0; print }' "$help"
    printf '.fi\n.SH SEE ALSO\n'
    if [ "$name" = tarn ]; then
      printf 'tarn\\-COMMAND(1) for each command below; docs/ in the source tree.\n'
    else
      printf 'tarn(1)\n'
    fi
  } >"$out/$name.1"
}

# "  verb   summary" lines of a help text's Commands: section.
commands() {
  awk '/^Commands:$/ { on = 1; next } on && /^$/ { on = 0 } on && /^  [a-z]/ { print }' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tarn" --help >"$tmp/tarn" 2>&1 || true
page tarn "the command for operators of a Lakestream (format v3) deployment" "$tmp/tarn"
n=1
while read -r verb summary; do
  [ "$verb" = version ] && continue
  "$tarn" "$verb" --help >"$tmp/$verb" 2>&1 || true
  page "tarn-$verb" "$summary" "$tmp/$verb"
  n=$((n + 1))
  while read -r sub subsummary; do
    "$tarn" "$verb" "$sub" --help >"$tmp/$verb-$sub" 2>&1 || true
    # A verb whose sub-words are not commands (e.g. inspect's kinds) still
    # prints a usage line; skip one that printed none.
    grep -q '^usage: ' "$tmp/$verb-$sub" || continue
    page "tarn-$verb-$sub" "$subsummary" "$tmp/$verb-$sub"
    n=$((n + 1))
  done < <(commands "$tmp/$verb")
done < <(commands "$tmp/tarn")
echo "manpages: $n pages in $out"
