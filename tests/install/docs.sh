#!/usr/bin/env bash
# The man pages and shell completions as `cmake --install` lays them out, in a staging prefix:
# every page renders without a warning, every verb src/cli/main.c dispatches has a page
# (lbbox-VERB.1), and bash completion completes the verbs and run's options.
# usage: tests/install/docs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "docs: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp" >/dev/null
man1=$tmp/share/man/man1
[ -d "$man1" ] || fail "no man pages under $man1 (is scdoc installed? scripts/setup.sh installs it)"

# Every page renders cleanly; a .so alias page points at a page that exists.
for page in "$man1"/*.1; do
	if head -1 "$page" | grep -q '^\.so '; then
		target=$(head -1 "$page" | sed 's/^\.so //')
		[ -f "$tmp/share/man/$target" ] || fail "$(basename "$page"): $target is missing"
		continue
	fi
	warn=$(groff -man -ww -z "$page" 2>&1) || fail "$(basename "$page"): groff failed: $warn"
	[ -z "$warn" ] || fail "$(basename "$page"): $warn"
	warn=$(MANWIDTH=80 man --warnings -l -Tutf8 "$page" 2>&1 >/dev/null) ||
		fail "$(basename "$page"): man failed: $warn"
	[ -z "$warn" ] || fail "$(basename "$page"): $warn"
done
[ -f "$man1/lbbox.1" ] || fail "no lbbox(1)"

# The verbs main.c dispatches: strcmp(verb, "X") and the image_verbs list.
verbs=$(sed -n 's/.*strcmp(verb, "\([a-z-]*\)").*/\1/p' "$src/src/cli/main.c"
	sed -n '/image_verbs\[\] = {/,/};/p' "$src/src/cli/main.c" | grep -o '"[a-z-]*"' | tr -d '"')
[ "$(echo "$verbs" | wc -w)" -ge 10 ] || fail "found only these verbs in main.c: $verbs"
for v in $verbs; do
	[ -f "$man1/lbbox-$v.1" ] || fail "verb '$v' has no page lbbox-$v.1"
done
# ... and the version verb main.c handles before the others
[ -f "$man1/lbbox-version.1" ] || fail "no lbbox-version.1"

# Completions where bash and zsh look for them; bash completes verbs and options.
comp=$tmp/share/bash-completion/completions/lbbox
[ -f "$comp" ] || fail "no bash completion at $comp"
[ -f "$tmp/share/zsh/site-functions/_lbbox" ] || fail "no zsh completion"
complete_words() { # WORDS... (the last is the one being completed)
	PATH=$tmp/bin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		_lbbox; echo "${COMPREPLY[@]}"' _ "$comp" "$@"
}
got=$(complete_words lbbox ru)
[ "$got" = run ] || fail "'lbbox ru<TAB>' completed to '$got', not 'run'"
got=$(complete_words lbbox s)
for w in session save serve; do
	[[ " $got " == *" $w "* ]] || fail "'lbbox s<TAB>' lacks $w: $got"
done
got=$(complete_words lbbox run --netw)
[ "$got" = --network ] || fail "'lbbox run --netw<TAB>' gave '$got'"
got=$(complete_words lbbox run --network o)
[ "$got" = "off on" ] || fail "'lbbox run --network o<TAB>' gave '$got'"
got=$(complete_words lbbox session "")
[[ " $got " == *" exec "* ]] || fail "'lbbox session <TAB>' gave '$got'"
if command -v zsh >/dev/null; then
	zsh -n "$tmp/share/zsh/site-functions/_lbbox" || fail "_lbbox does not parse"
fi
echo "docs: $(ls "$man1" | wc -l) pages, verbs: $(echo $verbs)"
