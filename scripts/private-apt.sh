# shellcheck shell=sh
# Sourced by the scripts that download Debian packages of other
# architectures (fetch-real-vdso.sh, kernel-harness.sh): an apt of their
# own under a cache directory, which leaves the host's apt state alone.
#
#   . "$ROOT/scripts/private-apt.sh"
#   private_apt DIR NATIVE ARCHES     # DIR/apt.conf and its directories
#   apt_get update; apt_cache policy PACKAGE ...
#
# NATIVE is apt's own architecture, ARCHES the comma-separated list it
# fetches indexes for.  The caller writes DIR/etc/sources.list.

private_apt() {
	PRIVATE_APT=$1
	mkdir -p "$1/etc/apt.conf.d" "$1/etc/preferences.d" "$1/etc/sources.list.d" \
		"$1/state/lists/partial" "$1/cache/archives/partial"
	[ -f "$1/state/status" ] || : >"$1/state/status"
	cat >"$1/apt.conf" <<EOC
Dir::Etc "$1/etc";
Dir::State "$1/state";
Dir::State::status "$1/state/status";
Dir::Cache "$1/cache";
Dir::Cache::pkgcache "$1/cache/pkgcache.bin";
Dir::Cache::srcpkgcache "$1/cache/srcpkgcache.bin";
APT::Architecture "$2";
APT::Architectures "$3";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
APT::Sandbox::User "root";
EOC
}

apt_get() { apt-get -c "$PRIVATE_APT/apt.conf" "$@"; }
apt_cache() { apt-cache -c "$PRIVATE_APT/apt.conf" "$@"; }
