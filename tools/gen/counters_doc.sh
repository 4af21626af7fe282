#!/bin/sh
# counters_doc.sh COUNTERS.md > counters_doc.c
#
# The table of every `gpuaggctl stats` name documented in docs/COUNTERS.md
# (the section "## `gpuaggctl stats`", rows "| `name` | kind | unit | text |")
# as C: const struct ops_counter_doc ops_counter_docs[], ops_ncounter_docs
# (daemon/http/ops_render.h).  The help text is the row's first sentence with
# the Markdown (backticks, links, emphasis) taken out.  Run by the Makefile
# at build time, so /metrics always carries the documentation it is built
# with.
set -eu
awk '
function cstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
BEGIN {
    print "/* Generated from docs/COUNTERS.md by tools/gen/counters_doc.sh: do not edit. */"
    print "#include \"daemon/http/ops_render.h\""
    print ""
    print "const struct ops_counter_doc ops_counter_docs[] = {"
    n = 0
}
/^## / { in_stats = ($0 ~ /^## `gpuaggctl stats`/) }
in_stats && /^\| `[^`]+` \|/ {
    line = $0
    sub(/^\| /, "", line)
    split(line, f, / \| /)
    name = f[1]; gsub(/`/, "", name); name = trim(name)
    kind = trim(f[2]); unit = trim(f[3])
    text = f[4]
    for (i = 5; i in f; i++) text = text " | " f[i]
    sub(/ \|[ \t]*$/, "", text)
    while (match(text, /\[[^]]*\]\([^)]*\)/)) {
        link = substr(text, RSTART, RLENGTH)
        sub(/\]\(.*$/, "", link); sub(/^\[/, "", link)
        text = substr(text, 1, RSTART - 1) link substr(text, RSTART + RLENGTH)
    }
    gsub(/`/, "", text); gsub(/\*\*/, "", text)
    # the first sentence: up to ". " followed by a capital letter or the end
    if (match(text, /\.[ ]+[A-Z(]/))
        text = substr(text, 1, RSTART)
    text = trim(text)
    printf "    { %s, %s, %s, %s },\n", cstr(name), cstr(kind), cstr(unit), cstr(text)
    n++
}
END {
    print "};"
    printf "const size_t ops_ncounter_docs = %d;\n", n
}
' "$1"
