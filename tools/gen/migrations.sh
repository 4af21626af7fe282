#!/bin/sh
# migrations.sh storage/sql/NNNN_*.sql... > migrations.c
#
# The schema migrations (storage/sql/, docs/STORAGE.md "Migrations") as C:
# const struct pg_schema_migration pg_schema_migrations[], pg_schema_nmigrations
# (storage/pg_schema.h), each file's text unchanged as one string.  A file
# is NNNN_words.sql, NNNN its version; its first line is
# "-- Migration N: name", N the same version and name what
# gpuagg_migrations.name records.  The files must come in ascending version
# order (the Makefile sorts them).  Run by the Makefile at build time, so
# the binary applies exactly the files it is built from.
set -eu
[ $# -gt 0 ] || { echo "migrations.sh: no migration files given" >&2; exit 1; }
awk '
function cstr(s) {
    gsub(/\\/, "&&", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s)
    gsub(/\?/, "\\?", s)                         # no trigraphs under -std=c11
    return s
}
function fail(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; bad = 1; exit 1 }
function close_file() { if (n) print "    },"; }
BEGIN {
    print "/* Generated from storage/sql/NNNN_*.sql by tools/gen/migrations.sh: do not edit. */"
    print "#include \"storage/pg_schema.h\""
    print ""
    print "const struct pg_schema_migration pg_schema_migrations[] = {"
    n = 0; last = 0
}
FNR == 1 {
    close_file()
    base = FILENAME; sub(/.*\//, "", base)
    if (base !~ /^[0-9][0-9][0-9][0-9]_[a-z0-9_]+\.sql$/)
        fail("the name is not NNNN_words.sql (four digits, lower-case words)")
    version = substr(base, 1, 4) + 0
    if (version <= last)
        fail(sprintf("version %d does not follow version %d", version, last))
    if (!match($0, /^-- Migration [0-9]+: ./))
        fail("the first line is not \"-- Migration " version ": <name>\"")
    head = $0; sub(/^-- Migration /, "", head)
    num = head; sub(/:.*/, "", num)
    if (num + 0 != version)
        fail(sprintf("the first line says migration %d, the file name %d", num + 0, version))
    name = head; sub(/^[0-9]+: /, "", name)
    printf "    { %d, \"%s\", \"%s\",\n", version, cstr(name), cstr(FILENAME)
    last = version; n++
}
{ printf "      \"%s\\n\"\n", cstr($0) }
END {
    if (bad) exit 1
    close_file()
    print "};"
    printf "const int pg_schema_nmigrations = %d;\n", n
}
' "$@"
