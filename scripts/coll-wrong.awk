#!/usr/bin/awk -f
# coll-wrong.awk FILE.csv: prints how many rows of an hwcheck coll csv have a
# nonzero `wrong` count, found by its header name (columns may follow it); a file
# with no header naming `wrong` prints "no-wrong-column" and exits 1.
BEGIN { FS = ","; col = 0; bad = 0 }
/^#/ { next }
/^size_bytes/ { for (i = 1; i <= NF; i++) if ($i == "wrong") col = i; next }
col > 0 && $col != 0 { bad++ }
END { if (col == 0) { print "no-wrong-column"; exit 1 } print bad }
