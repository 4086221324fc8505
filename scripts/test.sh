#!/usr/bin/env bash
# Builds lbbox and runs every test: style, unit + integration tests (normal build, then the
# ASan/UBSan build), and the cgroup-v2 tests inside a throw-away pure-v2 qemu guest.
# Runs scripts/setup.sh first, so a fresh Debian 12 host needs nothing else. Must run as root.
set -uo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "test: run as root (the integration tests build real sandboxes)" >&2; exit 2; }
scripts/setup.sh || exit 1

passed=0 failed=0
# stage NAME CMD...: runs one stage and adds its results to the totals: ctest's test counts, the
# guest's per-binary results, or else the stage itself as one test.
stage() {
	local name=$1 log rc line fail total
	shift
	log=$(mktemp)
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '[0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
	if [ -n "$line" ]; then
		fail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
		total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
		passed=$((passed + total - fail)) failed=$((failed + fail))
		[ "$rc" = 0 ] || [ "$fail" != 0 ] || failed=$((failed + 1))
	elif grep -q '^@@TEST-END' "$log"; then
		total=$(grep -c '^@@TEST-END' "$log")
		fail=$(grep '^@@TEST-END' "$log" | grep -Evc ' rc=0( |$)')
		passed=$((passed + total - fail)) failed=$((failed + fail))
		[ "$rc" = 0 ] || [ "$fail" != 0 ] || failed=$((failed + 1))
	elif [ "$rc" = 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	rm -f "$log"
}

stage "style (clang-format)" clang-format --dry-run -Werror $(git ls-files '*.c' '*.h')
stage "tests (build/)" ctest --test-dir build --output-on-failure --timeout 600

cmake -S . -B build-asan -DLBBOX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
	cmake --build build-asan -j"$(nproc)" >/dev/null || failed=$((failed + 1))
# The ASan binaries run against the same busybox test image.
LBBOX_TEST_ROOTFS=$PWD/build/images/busybox/rootfs ASAN_OPTIONS=detect_leaks=1 \
	stage "tests (build-asan/, ASan + UBSan)" ctest --test-dir build-asan --output-on-failure --timeout 900

# cgroup v2 for real: these hosts only have v1 controllers.
stage "cgroup-v2 guest (qemu)" env VM_ENV="LBBOX_BIN=/opt/lbbox/lbbox LBBOX_PROBE=/opt/lbbox/lbbox-probe LBBOX_TEST_ROOTFS=/opt/lbbox/rootfs" \
	scripts/vm-test.sh --extra build/lbbox:/opt/lbbox/lbbox --extra build/lbbox-probe:/opt/lbbox/lbbox-probe \
	--extra build/images/busybox/rootfs:/opt/lbbox/rootfs build/test_cgroup build/test_limits

echo
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
