#!/bin/sh
# tests/doc_links.sh - every relative link of the Markdown documentation
# (README.md, CONTRIBUTING.md, docs/*.md and the other *.md files git
# tracks) names a file that exists and, with #anchor, a heading (or an
# <a id=...>) of that file, as GitHub makes anchors of headings: lower case,
# punctuation dropped, spaces to hyphens, -1, -2 ... for repeats. One TAP
# line a file; links inside code blocks and code spans are not links.
# Skipped outside a git checkout (a TAP skip: the plan 1..0, exit 0).
src=${top_srcdir:-.}
cd "$src" || exit 1
# the files git tracks; a distribution tarball holds only some of the files
# the documentation links to, so outside a git checkout this test skips
files=$(git ls-files '*.md' 2>/dev/null)
[ -n "$files" ] || { echo "1..0 # SKIP not a git checkout"; exit 0; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

# anchors FILE: the anchors GitHub makes for FILE, one a line
anchors() {
    awk '
    /^(```|~~~)/ { code = !code; next }
    code { next }
    /^#+ / {
        h = $0; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
        h = tolower(h)
        gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
        if (h in seen) { n = seen[h]++; print h "-" n } else { seen[h] = 1; print h }
    }
    {
        l = $0
        while (match(l, /<a (id|name)="[^"]+"/)) {
            a = substr(l, RSTART, RLENGTH); sub(/^<a (id|name)="/, "", a); sub(/"$/, "", a)
            print a; l = substr(l, RSTART + RLENGTH)
        }
    }' "$1"
}

# links FILE: "LINE TARGET" for every relative link of FILE
links() {
    awk '
    /^ *(```|~~~)/ { code = !code; next }
    code { next }
    {
        l = $0
        gsub(/``[^`]*``/, "", l); gsub(/`[^`]*`/, "", l)
        while (match(l, /\]\([^) ]+\)/)) {
            t = substr(l, RSTART + 2, RLENGTH - 3); l = substr(l, RSTART + RLENGTH)
            if (t ~ /^(https?|mailto|ftp):/) continue
            print NR, t
        }
    }' "$1"
}

n=0
fail=0
for f in $files; do
    n=$((n + 1))
    dir=$(dirname "$f")
    bad=
    links "$f" > "$T/links"
    while read -r line target; do
        path=${target%%#*}
        anchor=
        case $target in *'#'*) anchor=${target#*#} ;; esac
        if [ -n "$path" ]; then
            dest=$dir/$path
            [ "$dir" = . ] && dest=$path
        else
            dest=$f
        fi
        if [ ! -e "$dest" ]; then
            bad="$bad
# $f:$line: $target: no file $dest"
            continue
        fi
        if [ -n "$anchor" ]; then
            case $dest in
            *.md)
                anchors "$dest" > "$T/anchors"
                grep -qxF "$anchor" "$T/anchors" ||
                    bad="$bad
# $f:$line: $target: $dest has no heading with the anchor #$anchor"
                ;;
            esac
        fi
    done < "$T/links"
    if [ -z "$bad" ]; then
        echo "ok $n - $f: every relative link resolves"
    else
        echo "not ok $n - $f: links that do not resolve$bad"
        fail=1
    fi
done
echo "1..$n"
exit $fail
