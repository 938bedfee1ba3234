#!/usr/bin/env bash
# Builds a local Debian base image with debootstrap and `docker import`, so the agentbox image can be
# built on a host that reaches Debian's mirror but no container registry:
#   images/build-base.sh                 # -> agentbox-base:bookworm (skipped when the tag exists)
#   BASE_IMAGE=agentbox-base:bookworm docker compose build
# Options (environment): AGENTBOX_BASE_IMAGE (tag), DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (plain http,
# so no CA certificate is needed inside the chroot), FORCE=1 to rebuild an existing tag. Needs root.
set -euo pipefail

tag="${AGENTBOX_BASE_IMAGE:-agentbox-base:bookworm}"
suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

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
