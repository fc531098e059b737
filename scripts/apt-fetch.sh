# shellcheck shell=bash
# Sourced by scripts that fetch Debian packages without installing them
# (scripts/kernel-headers; tests/vm/kernel.sh does the same for kernel
# images). Messages go to stderr, prefixed with $apt_who.
apt_who=${apt_who:-apt-fetch}

# The version apt would install of package $1 ("name" or "name:arch");
# empty when apt knows none.
apt_candidate() {
	apt-cache policy "$1" 2>/dev/null |
		sed -n 's/^ *Candidate: //p' | grep -v '^(none)$' || true
}

# Downloads packages ("name=version", "name:arch=version") into $1/deb and
# unpacks them all into $1 (a fresh folder), then drops the .debs; fails
# when any step does.
apt_unpack() {
	local dir=$1 f
	shift
	mkdir -p "$dir/deb" &&
		(cd "$dir/deb" && apt-get download -q "$@" >&2) || return 1
	for f in "$dir"/deb/*.deb; do dpkg -x "$f" "$dir" || return 1; done
	rm -rf "$dir/deb"
}

# A fresh CI machine has no package lists, and stale ones point at files
# the mirror no longer has: apt-get update, once per run and only as root.
# Fails when it did not run (not root, or it already ran).
apt_updated=
apt_update_once() {
	[ -z "$apt_updated" ] || return 1
	if [ "$(id -u)" -ne 0 ]; then
		echo "$apt_who: package lists lack it or are stale, and not root: run apt-get update" >&2
		return 1
	fi
	apt_updated=1
	echo "$apt_who: running apt-get update" >&2
	apt-get update -q >&2
}
