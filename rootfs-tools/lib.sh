# lib.sh — what every rootfs builder shares: options, messages, temporary paths, and the
# stamp + atomic-rename install, so DEST is always absent, the old tree or the complete new one.
# Sourced by the builders after they set PROG; defines $verbose, $dest, $parent, $base.
# shellcheck shell=bash

STAMP_NAME=.lbbox-rootfs-stamp
verbose=0
tmp_paths=()

die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }
log() { if [ "$verbose" = 1 ]; then printf '%s: %s\n' "$PROG" "$*" >&2; fi; }
usage() { printf 'usage: %s [-v] DEST\n' "$PROG" >&2; exit 2; }

cleanup() {
	local p
	for p in "${tmp_paths[@]}"; do rm -rf -- "$p"; done
}
trap cleanup EXIT

# rootfs_args "$@": -v, then DEST.
rootfs_args() {
	local opt
	while getopts vh opt; do
		case "$opt" in
		v) verbose=1 ;;
		*) usage ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -eq 1 ] || usage
	dest=${1%/}
	[ -n "$dest" ] || die "DEST must not be /"
	parent=$(dirname -- "$dest")
	base=$(basename -- "$dest")
}

# rootfs_lock STAMP: serialises builders of the same parent directory; returns 1 (nothing to
# do) when DEST already carries STAMP.
rootfs_lock() {
	mkdir -p -- "$parent"
	exec 9<"$parent"
	flock 9
	if [ -f "$dest/$STAMP_NAME" ] && [ "$(cat "$dest/$STAMP_NAME")" = "$1" ]; then
		log "$dest is up to date"
		return 1
	fi
}

# rootfs_tmp VAR KIND [-d]: sets VAR to a new temporary path beside DEST (a directory with
# -d), removed on exit unless installed. Not a $(...) function: the list must see the path.
rootfs_tmp() {
	local p
	if [ "${3:-}" = -d ]; then
		p=$(mktemp -d "$parent/.$base.$2.XXXXXX")
	else
		p=$(mktemp "$parent/.$base.$2.XXXXXX")
	fi
	tmp_paths+=("$p")
	printf -v "$1" '%s' "$p"
}

# rootfs_install WORK STAMP: stamps the finished tree and renames it into place.
rootfs_install() {
	local work=$1 old
	printf '%s\n' "$2" >"$work/$STAMP_NAME"
	# rename(2) cannot replace a non-empty directory: move the old tree aside first.
	if [ -e "$dest" ] || [ -L "$dest" ]; then
		rootfs_tmp old old -d
		mv -T -- "$dest" "$old/tree"
	fi
	mv -T -- "$work" "$dest"
}

# --- Debian trees (python.sh, box.sh): mmdebstrap from the host's own mirror ---
# The builder sets PACKAGES (comma-separated) and calls debian_rootfs NAME.

SUITE=bookworm
VARIANT=apt
# Bump when debian_postprocess changes, so existing trees get rebuilt.
LAYOUT_VERSION=2
# Documentation and translations nobody reads inside a sandbox.
DPKG_EXCLUDES=(
	'path-exclude=/usr/share/man/*'
	'path-exclude=/usr/share/info/*'
	'path-exclude=/usr/share/doc/*'
	'path-include=/usr/share/doc/*/copyright'
	'path-exclude=/usr/share/locale/*'
	'path-include=/usr/share/locale/locale.alias'
	'path-exclude=/usr/share/lintian/*'
)

# Prints the host's enabled binary ("deb") entries for $SUITE, $SUITE-updates
# and $SUITE-security as one-line sources.list entries, from both the one-line
# (.list) and the deb822 (.sources) formats. Inline Signed-By keys are dropped
# (mmdebstrap then uses the host keyrings); keyring paths are kept.
host_mirror_lines() {
	local files=() f
	[ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || return 0
	awk -v suite="$SUITE" '
	function wanted(s) {
		return s == suite || s == suite "-updates" || s == suite "-security"
	}
	function emit(opts, uri, s, comps) {
		if (!wanted(s)) return
		sub(/\/+$/, "", uri)
		if (opts != "") print "deb [" opts "] " uri " " s " " comps
		else print "deb " uri " " s " " comps
	}
	function flush822(   i, j, nt, nu, ns, t, u, s, opts, isdeb) {
		if (!inpara) return
		inpara = 0
		if (tolower(fld["enabled"]) == "no") { delete fld; return }
		nt = split(fld["types"], t, /[ \t]+/)
		isdeb = 0
		for (i = 1; i <= nt; i++) if (t[i] == "deb") isdeb = 1
		if (!isdeb) { delete fld; return }
		opts = ""
		if (fld["signed-by"] ~ /^\//) opts = "signed-by=" fld["signed-by"]
		if (fld["architectures"] != "") {
			a = fld["architectures"]; gsub(/[ \t]+/, ",", a)
			opts = opts (opts != "" ? " " : "") "arch=" a
		}
		nu = split(fld["uris"], u, /[ \t]+/)
		ns = split(fld["suites"], s, /[ \t]+/)
		for (i = 1; i <= nu; i++)
			for (j = 1; j <= ns; j++)
				if (u[i] != "") emit(opts, u[i], s[j], fld["components"])
		delete fld
	}
	FNR == 1 { flush822(); is822 = (FILENAME ~ /\.sources$/); last = "" }
	{ sub(/\r$/, "") }
	is822 {
		if ($0 ~ /^[ \t]*#/) next
		if ($0 ~ /^[ \t]*$/) { flush822(); next }
		if ($0 ~ /^[ \t]/) {            # continuation: multi-line value
			if (last == "signed-by") fld[last] = "inline"
			next
		}
		inpara = 1
		k = $0; sub(/:.*/, "", k); k = tolower(k)
		v = $0; sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
		fld[k] = v; last = k
		next
	}
	{
		line = $0
		sub(/#.*/, "", line)
		n = split(line, w, /[ \t]+/)
		i = 1
		if (w[i] == "") i++
		if (w[i] != "deb") next
		i++
		opts = ""
		if (w[i] ~ /^\[/) {
			opts = w[i]
			while (w[i] !~ /\]$/ && i < n) { i++; opts = opts " " w[i] }
			i++
			gsub(/^\[|\]$/, "", opts)
			# keep only options that make sense outside the host
			m = split(opts, o, / /); opts = ""
			for (k = 1; k <= m; k++)
				if (o[k] ~ /^(signed-by|arch|trusted)=/)
					opts = opts (opts != "" ? " " : "") o[k]
		}
		uri = w[i]; s = w[i + 1]; comps = ""
		for (k = i + 2; k <= n; k++) if (w[k] != "") comps = comps (comps != "" ? " " : "") w[k]
		emit(opts, uri, s, comps)
	}
	END { flush822() }
	' "${files[@]}"
}

# Prints the host apt settings mmdebstrap needs to reach the same mirror.
host_aptopts() {
	apt-config dump 2>/dev/null | grep -E \
		'^Acquire::(Check-Valid-Until|Check-Date|Retries|https?::Proxy|https?::Proxy-Auto-Detect|https?::Proxy::[^ ]+|ForceIPv4|ForceIPv6) ' ||
		true
}

debian_postprocess() {
	local root=$1
	# Mountpoints and files a sandbox binds over must exist in a read-only root.
	mkdir -p "$root/workspace" "$root/home/sandbox" "$root/tmp" "$root/var/tmp"
	chmod 0755 "$root/workspace"
	chmod 1777 "$root/tmp" "$root/var/tmp"

	grep -q '^sandbox:' "$root/etc/passwd" ||
		echo 'sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh' >>"$root/etc/passwd"
	grep -q '^sandbox:' "$root/etc/group" ||
		echo 'sandbox:x:1000:' >>"$root/etc/group"
	if [ -f "$root/etc/shadow" ] && ! grep -q '^sandbox:' "$root/etc/shadow"; then
		echo 'sandbox:*:19000:0:99999:7:::' >>"$root/etc/shadow"
	fi
	chown 1000:1000 "$root/home/sandbox"

	# mmdebstrap copies the host's resolv.conf and hostname: drop them, keep
	# empty regular files (not symlinks) as bind targets.
	rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
	: >"$root/etc/resolv.conf"
	: >"$root/etc/hostname"
	if [ ! -s "$root/etc/hosts" ] || [ -L "$root/etc/hosts" ]; then
		rm -f "$root/etc/hosts"
		printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
			>"$root/etc/hosts"
	fi
	chmod 0644 "$root/etc/resolv.conf" "$root/etc/hostname" "$root/etc/hosts"

	# mmdebstrap cleans these already; make sure, they are most of the size.
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* \
		"$root"/var/cache/debconf/*-old "$root"/var/log/apt/* "$root"/root/.cache
}

# debian_rootfs NAME: builds DEST with mmdebstrap (the packages in $PACKAGES), unless its
# stamp is current.
debian_rootfs() {
	local name=$1
	command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
	local mirrors=() aptopts=() line
	while IFS= read -r line; do mirrors+=("$line"); done < <(host_mirror_lines)
	[ ${#mirrors[@]} -gt 0 ] ||
		die "no enabled '$SUITE' deb source found in /etc/apt/sources.list(.d)"
	while IFS= read -r line; do aptopts+=("$line"); done < <(host_aptopts)

	local stamp
	stamp=$(
		printf 'lbbox-rootfs %s\nlayout %s\nsuite %s\nvariant %s\npackages %s\n' \
			"$name" "$LAYOUT_VERSION" "$SUITE" "$VARIANT" "$PACKAGES"
		printf 'mirror %s\n' "${mirrors[@]}"
	)

	rootfs_lock "$stamp" || return 0
	local work logf
	rootfs_tmp work tmp -d
	chmod 0755 "$work"

	local args=(--variant="$VARIANT" --format=directory --mode=root
		--include="$PACKAGES")
	# Bookworm's init-system-helpers pulls in usrmerge and with it all of perl
	# (~50 MB) unless the tree is set up merged-/usr upfront.
	local hooks=/usr/share/mmdebstrap/hooks/merged-usr
	[ -d "$hooks" ] && args+=(--hook-dir="$hooks")
	local o
	for o in "${aptopts[@]}"; do args+=(--aptopt="$o"); done
	for o in "${DPKG_EXCLUDES[@]}"; do args+=(--dpkgopt="$o"); done
	if [ "$verbose" = 1 ]; then
		args+=(--verbose)
		log "mirrors: ${mirrors[*]}"
		log "building $dest"
	else
		args+=(--quiet)
	fi

	local start=$SECONDS
	if [ "$verbose" = 1 ]; then
		mmdebstrap "${args[@]}" "$SUITE" "$work" "${mirrors[@]}" ||
			die "mmdebstrap failed"
	else
		# Hooks print even with --quiet: keep the output for failures only.
		rootfs_tmp logf log
		if ! mmdebstrap "${args[@]}" "$SUITE" "$work" "${mirrors[@]}" >"$logf" 2>&1; then
			cat -- "$logf" >&2
			die "mmdebstrap failed"
		fi
	fi
	debian_postprocess "$work"
	rootfs_install "$work" "$stamp"
	log "built $dest in $((SECONDS - start)) s ($(du -sh "$dest" | cut -f1))"
}
