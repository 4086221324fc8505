#!/usr/bin/env bash
# Builds lbbox and runs every test: style, unit + integration tests (normal build, then the
# ASan/UBSan build), the fuzz targets for a bounded time, and the cgroup-v2 tests inside a
# throw-away pure-v2 qemu guest.
# Runs scripts/setup.sh first, so a fresh Debian 12 host needs nothing else. Must run as root.
set -uo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "test: run as root (the integration tests build real sandboxes)" >&2; exit 2; }
# Everything the suites start and leave (a session's pid 1 after the lbbox that made it) comes
# back to one reaper, not to the host's init, and nothing may still run once the suites end.
if [ -z "${LBBOX_TEST_REAPER:-}" ]; then
	export LBBOX_TEST_REAPER=1
	exec python3 tests/helpers/subreaper.py scripts/test.sh "$@"
fi
scripts/setup.sh || exit 1

passed=0 failed=0 timings=() failures=()
# stage NAME CMD...: runs one stage and adds its results to the totals: the Criterion tests it
# ran (from their "Synthesis" lines, in ctest's output or the guest's console), or else the
# stage itself as one test. A stage that fails without a failing test counts as one failure.
stage() {
	local name=$1 log rc p f t0=$SECONDS
	shift
	log=$(mktemp)
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	timings+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$name")")
	read -r p f < <(sed 's/\x1b\[[0-9;]*m//g' "$log" |
		sed -nE 's/.*Synthesis: Tested: [0-9]+ \| Passing: ([0-9]+) \| Failing: ([0-9]+) \| Crashing: ([0-9]+).*/\1 \2 \3/p' |
		awk '{p += $1; f += $2 + $3} END {print p + 0, f + 0}')
	if [ "$p" = 0 ] && [ "$f" = 0 ]; then
		[ "$rc" = 0 ] && p=1 || f=1
	elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
	# CI keeps only the log's end: what failed, and why, is repeated there
	if [ "$f" != 0 ]; then
		failures+=("-- $name:")
		mapfile -t -O "${#failures[@]}" failures < <(sed 's/\x1b\[[0-9;]*m//g' "$log" |
			grep -E -A4 'Assertion Failed|\[FAIL\]|\*\*\*Failed|rc=[1-9]' | head -60)
	fi
	rm -f "$log"
}

stage "style (clang-format)" clang-format --dry-run -Werror $(git ls-files '*.c' '*.h')
stage "tests (build/)" ctest --test-dir build -V --timeout 600

cmake -S . -B build-asan -DLBBOX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
	cmake --build build-asan -j"$(nproc)" >/dev/null || failed=$((failed + 1))
# The ASan binaries run against the same busybox test image.
LBBOX_TEST_ROOTFS=$PWD/build/images/busybox/rootfs LBBOX_TEST_PYTHON_OCI=$PWD/build/images/python-oci \
	LBBOX_TEST_BOX_OCI=$PWD/build/images/box-oci \
	ASAN_OPTIONS=detect_leaks=1 \
	stage "tests (build-asan/, ASan + UBSan)" ctest --test-dir build-asan -V --timeout 900
# Every parser of outside input under libFuzzer for ~100 s (scripts/fuzz.sh builds build-fuzz/).
stage "fuzz (libFuzzer, ASan + UBSan)" scripts/fuzz.sh

# What packagers build (a Release build, warning-free), installed into a staging prefix and run
# from there on the default paths, as root and as a user; the README's runnable blocks with it.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DLBBOX_TESTS=OFF >/dev/null &&
	cmake --build build-release -j"$(nproc)" >/dev/null || failed=$((failed + 1))
stage "default paths, installed Release build, README" tests/install/default_paths.sh build-release

# Load with leak checks: 1,000 box_exec through lbbox serve, 1,000 lbbox run.
stage "load (Box RPC)" python3 tests/load/load.py rpc build/lbbox build/images/busybox/rootfs
stage "load (lbbox run)" python3 tests/load/load.py run build/lbbox build/images/busybox/rootfs

# cgroup v2 for real: these hosts only have v1 controllers (and exec joins by CLONE_INTO_CGROUP there).
stage "cgroup-v2 guest (qemu)" env VM_ENV="LBBOX_BIN=/opt/lbbox/lbbox LBBOX_PROBE=/opt/lbbox/lbbox-probe LBBOX_TEST_ROOTFS=/opt/lbbox/rootfs" \
	scripts/vm-test.sh --extra build/lbbox:/opt/lbbox/lbbox --extra build/lbbox-init:/opt/lbbox/lbbox-init \
	--extra build/lbbox-probe:/opt/lbbox/lbbox-probe --extra build/images/busybox/rootfs:/opt/lbbox/rootfs \
	build/test_cgroup build/test_limits build/test_session build/test_proc build/test_detach \
	build/test_session_cli build/test_sealed_exe
# Without root, in a cgroup-v2 subtree delegated to the user (as systemd gives a user's slice):
# the limit, session and managed-process suites again, lbbox in its user namespace mode (and the
# sealed-exe suite, where lbbox seals itself with a memfd copy: no overlay without root).
stage "cgroup-v2 guest (qemu), rootless" env VM_ENV="LBBOX_BIN=/opt/lbbox/lbbox LBBOX_PROBE=/opt/lbbox/lbbox-probe LBBOX_TEST_ROOTFS=/opt/lbbox/rootfs" \
	scripts/vm-test.sh --uid 1000 --extra build/lbbox:/opt/lbbox/lbbox --extra build/lbbox-init:/opt/lbbox/lbbox-init \
	--extra build/lbbox-probe:/opt/lbbox/lbbox-probe --extra build/images/busybox/rootfs:/opt/lbbox/rootfs \
	build/test_limits build/test_session build/test_proc build/test_sealed_exe

echo
[ "${#failures[@]}" = 0 ] || printf '%s\n' "failures:" "${failures[@]}" ""
printf '%s\n' "${timings[@]}"
echo "$passed passed, $failed failed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
[ "$failed" = 0 ]
