#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, ASan + UBSan) of lbbox's parsers of outside input: one
# target per parser, tests/fuzz/fuzz_<target>.c. Builds build-fuzz/ with clang when needed,
# replays every committed regression input (tests/fuzz/regressions/<target>/) and seed
# (tests/fuzz/corpus/<target>/), then fuzzes each target for FUZZ_SECONDS from a scratch copy of
# its corpus (the committed one is never modified).
#
# On a crash, leak, timeout, out-of-memory or broken property the input is copied to
# tests/fuzz/regressions/<target>/ (commit it with the fix: it is replayed on every run from then
# on), the target and file are printed, and the exit status is 1. 0 when every target ran clean.
#
#   scripts/fuzz.sh [TARGET...]     e.g. scripts/fuzz.sh unpack rpc (default: every target)
#   FUZZ_SECONDS=60 scripts/fuzz.sh  longer runs (default 13 s per target, ~100 s in all)
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-13}
BUILD=build-fuzz
# Longest input per target: room for the seeds and more, small enough to keep the runs fast
# (references a little over their 1024-byte limit, RPC input over 16 KiB so replies get chunked).
declare -A MAX_LEN=([rpc]=32768 [box_spec]=8192 [seccomp]=24576 [ref]=1100 [manifest]=8192
	[load_docker]=4096 [unpack]=16384 [skill_meta]=4096 [skill_zip]=16384
	[oci_config]=8192)
# Stack traces for UBSan's reports (the build already aborts on the first one).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for src in tests/fuzz/fuzz_*.c; do
		t=${src#tests/fuzz/fuzz_}
		targets+=("${t%.c}")
	done
fi
for t in "${targets[@]}"; do
	[ -f "tests/fuzz/fuzz_$t.c" ] || { echo "fuzz: no target $t (tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
done

# (1) the build: clang, the sanitizers, libFuzzer; only the fuzz targets and their libraries.
# -O1 without NDEBUG: fast enough to fuzz, asserts and frame pointers kept.
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	CC=${FUZZ_CC:-clang} cmake -S . -B "$BUILD" -DLBBOX_FUZZ=ON -DLBBOX_SANITIZE=ON -DLBBOX_TESTS=OFF \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1 >/dev/null || { echo "fuzz: configure failed" >&2; exit 1; }
fi
cmake --build "$BUILD" -j"$(nproc)" --target fuzz >/dev/null || {
	echo "fuzz: build failed (cmake --build $BUILD --target fuzz)" >&2
	exit 1
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lbbox-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
failed=0

declare -A replay_failed
# The sanitizer's or the property's report, without libFuzzer's and libc's own frames.
report() { # log
	grep -E 'ERROR|SUMMARY|property violated|runtime error|#[0-9]+ 0x' "$1" |
		grep -vE 'fuzzer::|__sanitizer_print_stack_trace|libc\.so|libc_start|in _start' | head -25 >&2
}
# Keeps a finding: copied into the target's regression directory, reported.
keep() { # target file log
	local t=$1 f=$2 log=$3 dst=tests/fuzz/regressions/$1
	mkdir -p "$dst"
	cp "$f" "$dst/"
	echo "fuzz: FAILED: target $t, input $dst/$(basename "$f")" >&2
	echo "fuzz: reproduce: $BUILD/fuzz_$t $dst/$(basename "$f")" >&2
	report "$log"
	failed=1
}

# (2) replay: every committed input, run once each.
for t in "${targets[@]}"; do
	mapfile -t inputs < <(find "tests/fuzz/regressions/$t" "tests/fuzz/corpus/$t" -type f 2>/dev/null | sort)
	[ ${#inputs[@]} -gt 0 ] || continue
	mkdir -p "$scratch/$t/tmp"
	log=$scratch/$t/replay.log
	if TMPDIR=$scratch/$t/tmp "$BUILD/fuzz_$t" -rss_limit_mb=2048 -timeout=10 "${inputs[@]}" >"$log" 2>&1; then
		echo "fuzz: $t: replayed ${#inputs[@]} committed inputs"
	else
		bad=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
		echo "fuzz: FAILED: target $t, committed input ${bad:-?} (replay)" >&2
		echo "fuzz: reproduce: $BUILD/fuzz_$t ${bad:-?}" >&2
		report "$log"
		replay_failed[$t]=1 failed=1
	fi
done

# (3) fuzz each target for FUZZ_SECONDS.
for t in "${targets[@]}"; do
	if [ -n "${replay_failed[$t]:-}" ]; then
		echo "fuzz: $t not fuzzed: a committed input fails (above)" >&2
		continue
	fi
	dir=$scratch/$t
	mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
	cp -r "tests/fuzz/corpus/$t/." "$dir/corpus/" 2>/dev/null
	[ -d "tests/fuzz/regressions/$t" ] && cp -r "tests/fuzz/regressions/$t/." "$dir/corpus/"
	log=$dir/fuzz.log
	TMPDIR=$dir/tmp "$BUILD/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -max_len="${MAX_LEN[$t]:-4096}" \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
		"$dir/corpus" >"$log" 2>&1
	rc=$?
	# libFuzzer's last status line ("#N NEW|REDUCE|pulse|DONE cov: C ft: F ...") and final stats
	final=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1)
	cov=$(sed -nE 's/.* cov: ([0-9]+) .*/\1/p' <<<"$final")
	execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	shopt -s nullglob
	found=("$dir"/artifacts/*)
	shopt -u nullglob
	if [ "$rc" = 0 ] && [ ${#found[@]} = 0 ]; then
		printf 'fuzz: %-12s ok: %s runs, %s exec/s, cov: %s\n' "$t" "${runs:-?}" "${execs:-?}" "${cov:-?}"
		continue
	fi
	if [ ${#found[@]} = 0 ]; then
		echo "fuzz: FAILED: target $t exited $rc without an artifact" >&2
		tail -n 30 "$log" >&2
		failed=1
	fi
	for f in "${found[@]}"; do
		keep "$t" "$f" "$log"
	done
done

[ "$failed" = 0 ] && echo "fuzz: every target ran clean"
exit "$failed"
