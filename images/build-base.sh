#!/usr/bin/env bash
# Builds a local Debian base image with debootstrap and `docker import`, so the agentbox image can be
# built on a host that reaches Debian's mirror but no container registry:
#   images/build-base.sh                 # -> agentbox-base:bookworm (skipped when the tag exists)
#   BASE_IMAGE=agentbox-base:bookworm docker compose build
# Options (environment): AGENTBOX_BASE_IMAGE (tag), DEBIAN_SUITE (bookworm), DEBIAN_MIRROR and
# DEBIAN_SECURITY_MIRROR (default: the mirrors this machine's apt uses for the suite, in plain http so no
# CA certificate is needed inside the chroot; packages are verified by signature), FORCE=1 to rebuild an
# existing tag. Needs root.
set -euo pipefail

# The mirror this machine's apt configuration uses for suite $1 (deb822 *.sources or one-line *.list).
apt_mirror() {
  {
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    echo
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) \([^ ]*\).*/Types: deb\nURIs: \2\nSuites: \3\n/p' || true
  } | awk -v want="$1" '
    function flush() { if (!found && binary && hit && uri != "") { print uri; found = 1 } uri = ""; hit = 0; binary = 0 }
    /^[[:space:]]*$/ { flush(); next }
    /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") binary = 1 }
    /^URIs:/ { uri = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
    END { flush() }' | sed 's#^https://#http://#; s#/*$##'
}

tag="${AGENTBOX_BASE_IMAGE:-agentbox-base:bookworm}"
suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-$(apt_mirror "$suite")}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-$(apt_mirror "$suite-security")}"
if [ -z "$mirror" ] || [ -z "$security_mirror" ]; then
  echo "build-base: this machine's apt configuration names no mirror for $suite and $suite-security;" \
    "set DEBIAN_MIRROR and DEBIAN_SECURITY_MIRROR (plain http)" >&2
  exit 1
fi

if [ "${FORCE:-0}" != "1" ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "build-base: $tag already exists (FORCE=1 rebuilds it)"
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "build-base: debootstrap needs root" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "build-base: install debootstrap (apt-get install debootstrap)" >&2; exit 1; }

workdir="$(mktemp -d /var/tmp/agentbox-base.XXXXXX)"
trap 'rm -rf "$workdir"' EXIT
rootfs="$workdir/rootfs"

echo "build-base: debootstrap $suite (minbase) from $mirror"
debootstrap --variant=minbase --components=main "$suite" "$rootfs" "$mirror"

# The same sources a debian:*-slim image has, over plain http.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES

# Keep images small, as the official slim images do.
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APTCONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APTCONF
echo 'APT::Install-Recommends "false";' >"$rootfs/etc/apt/apt.conf.d/90no-recommends"

rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log \
  "$rootfs"/tmp/* "$rootfs"/dev/*
: >"$rootfs/etc/machine-id"

echo "build-base: importing as $tag"
tar --numeric-owner -C "$rootfs" -c . \
  | docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["bash"]' \
      - "$tag"
docker image inspect --format 'build-base: {{.RepoTags}} {{.Size}} bytes' "$tag"
