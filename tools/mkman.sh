#!/bin/sh
# tools/mkman.sh -- assemble man/vlplan.1 from man/vlplan.1.in, the section fragments
# kept next to it (configuration keys, distributions, one per strategy), and what the
# strategy registry says of itself: `vlplan strategies --format mdoc` (every strategy,
# its parameters and capabilities) and the registry order of the strategy fragments.
# VLPLAN names the binary to ask (default build/vlplan; `make man/vlplan.1` builds it).
set -eu
cd "$(dirname "$0")/.."
VLPLAN=${VLPLAN:-build/vlplan}
[ -x "$VLPLAN" ] || { echo "mkman.sh: $VLPLAN not built (run make)" >&2; exit 1; }
tmp=$(mktemp "${TMPDIR:-/tmp}/vlplan-man.XXXXXX")
trap 'rm -f "$tmp" "$tmp.reg"' EXIT
"$VLPLAN" strategies --format mdoc > "$tmp.reg"
# one .Ss per strategy that has a fragment, in registry order
strategies=""
for s in $("$VLPLAN" strategies --format csv | tail -n +2 | cut -d, -f1); do
    [ -f "man/$s-section.mdoc" ] && strategies="$strategies man/$s-section.mdoc"
done
awk -v strategies="$strategies" -v registry="$tmp.reg" '
/^@CONFIG_SECTION@$/ { while ((getline l < "man/config-section.mdoc") > 0) print l; next }
/^@GEN_SECTION@$/    { while ((getline l < "man/gen-section.mdoc") > 0) print l; next }
/^@STRATEGY_REGISTRY@$/ { while ((getline l < registry) > 0) print l; next }
/^@STRATEGY_SECTIONS@$/ {
    n = split(strategies, files, " ")
    for (i = 1; i <= n; i++) while ((getline l < files[i]) > 0) print l
    next
}
{ print }
' man/vlplan.1.in > "$tmp"
mv "$tmp" man/vlplan.1
