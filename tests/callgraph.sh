#!/bin/sh
# tests/callgraph.sh - no call cycles between files: for every object file of
# the build (the library's, the tools', the benchmarks' and, when built, the
# tests'), `nm` says which global symbols it defines and which it uses; a use
# of a symbol another file defines is an edge from the user's source file to
# the definer's (a call, or a function or table taken by address). The files
# of a cycle (a strongly connected component of more than one file) are
# reported with the symbols that make its edges, one TAP line per cycle.
#
# A symbol several objects define (each test program's helpers, main) gives
# no edge. Generated protobuf-c files take part like any other.
#   tests/callgraph.sh            TAP, for make check (run in the build dir)
#   tests/callgraph.sh --edges    the file-level graph, "user -> definer: symbols"
top_builddir=${top_builddir:-.}
mode=${1:-}
if ! command -v nm >/dev/null 2>&1; then
    echo "1..0 # SKIP nm not found (apt-get install binutils)"
    exit 0
fi
objs=$(find "$top_builddir" -name '*.o' ! -path '*/.git/*' ! -path '*/conftest*' | sort)
if [ -z "$objs" ]; then
    echo "1..0 # SKIP no object files: build first"
    exit 0
fi
# The sources there are (the generated .pb-c.c files in the build tree):
# an object whose source is gone (a file moved since the last build) is left out.
srcdir=${top_srcdir:-.}
list=$(mktemp "${TMPDIR:-/tmp}/callgraph.XXXXXX")
trap 'rm -f "$list"' EXIT
{ (cd "$srcdir" && find . -name '*.c' ! -path './.git/*')
  (cd "$top_builddir" && find . -name '*.pb-c.c'); } | sed 's|^\./||' > "$list"
# "object: symbol kind ..." lines, one nm for all
# shellcheck disable=SC2086
nm -A -P $objs 2>/dev/null | awk -v mode="$mode" -v list="$list" -v top="$top_builddir" '
# An object named by its source file: the .libs/ of libtool dropped, and
# the per-target prefix of automake (dir/target-file.o) when only that names one.
function src(o,    s, d, f) {
    sub(/:$/, "", o)
    s = o
    if (index(s, top "/") == 1)
        s = substr(s, length(top) + 2)
    sub(/^\.\//, "", s)
    sub(/\/\.libs\//, "/", s)
    sub(/\.o$/, ".c", s)
    if (!(s in have) && match(s, /[^\/]*$/)) {
        d = substr(s, 1, RSTART - 1)
        f = substr(s, RSTART)
        sub(/^[^-]*-/, "", f)
        s = d f
    }
    return (s in have) ? s : ""
}

function strong(v,    i, w) {
    idx[v] = low[v] = ++counter
    stack[++sp] = v
    on[v] = 1
    for (i = 1; i <= nadj[v]; i++) {
        w = adj[v, i]
        if (!(w in idx)) {
            strong(w)
            if (low[w] < low[v])
                low[v] = low[w]
        } else if (on[w] && idx[w] < low[v])
            low[v] = idx[w]
    }
    if (low[v] == idx[v]) {
        ncomp++
        size = 0
        do {
            w = stack[sp--]
            on[w] = 0
            comp[w] = ncomp
            members[ncomp] = members[ncomp] " " w
            size++
        } while (w != v)
        csize[ncomp] = size
    }
}
BEGIN {
    while ((getline line < list) > 0)
        have[line] = 1
}
{
    if (!($1 in name))
        name[$1] = src($1)
    f = name[$1]
    if (f == "")
        next
    $1 = f
    t = $2; $2 = $3; $3 = t   # source kind symbol, as below
    # objects of the same source (a program built twice) are one node
    if ($2 == "U")
        uses[f, $3] = 1
    else if ($2 ~ /^[TDBRVWGSCi]$/) {
        if (!(($3, f) in defined_by)) {
            defined_by[$3, f] = 1
            ndef[$3]++
            definer[$3] = f
        }
    }
    files[f] = 1
}
END {
    for (k in uses) {
        split(k, p, SUBSEP)
        f = p[1]; s = p[2]
        if (ndef[s] != 1 || definer[s] == f)
            continue
        g = definer[s]
        if (!((f, g) in edge)) {
            edge[f, g] = s
            adj[f, ++nadj[f]] = g
        } else if (length(edge[f, g]) < 200)
            edge[f, g] = edge[f, g] " " s
    }
    if (mode == "--edges") {
        for (e in edge) {
            split(e, p, SUBSEP)
            print p[1] " -> " p[2] ": " edge[e]
        }
        exit 0
    }
    n = 0
    for (f in files)
        names[++n] = f
    for (i = 1; i <= n; i++)
        if (!(names[i] in idx))
            strong(names[i])
    bad = 0
    for (c = 1; c <= ncomp; c++)
        if (csize[c] > 1)
            bad++
    print "1.." (bad ? bad : 1)
    if (!bad) {
        print "ok 1 - no call cycle among " n " files"
        exit 0
    }
    t = 0
    for (c = 1; c <= ncomp; c++) {
        if (csize[c] < 2)
            continue
        print "not ok " ++t " - a cycle:" members[c]
        split(substr(members[c], 2), m, " ")
        for (i in m)
            for (j in m)
                if ((m[i], m[j]) in edge)
                    print "#   " m[i] " -> " m[j] ": " edge[m[i], m[j]]
    }
    exit 1
}'
