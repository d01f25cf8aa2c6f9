#!/usr/bin/env bash
# Proves the image without a registry (none is reachable here): debootstrap a minimal Debian
# bookworm root with the runtime libraries, commit it as a local base image with buildah, build the
# Dockerfile's runtime stage on it around a receiptd built on the host, run it with podman (host
# network, loopback only), probe /healthz and a receipt through the built-in simulator, stop it.
# Exits 0 with a "skipped" line where these tools cannot run (no root, no debootstrap, …), so CI
# can call it everywhere; any failure after the tools start is a failure.
# Needs (as root): apt-get install -y buildah podman runc debootstrap
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
skip() { echo "container smoke test skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, buildah and podman here run as root)"
for tool in debootstrap buildah podman runc; do command -v "$tool" >/dev/null || skip "$tool is not installed"; done

work=${CONTAINER_WORK:-/tmp/receiptd-container}
mkdir -p "$work"
# Debian's default OCI runtime (crun) fails on this kind of machine's cgroups; runc works, with
# rlimits inside the hard limits (../shared/reference/server-notes.md "Containers without a registry").
cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF="$work/containers.conf"
# The runtime libraries the base is debootstrapped with; the base's tag names them, so a change builds a new one.
packages=libcurl4,libsqlite3-0,libpq5,zlib1g,libstdc++6,ca-certificates,curl
base=localhost/receiptd-bookworm-base:$(echo "$packages" | md5sum | cut -c1-12)
image=localhost/receiptd:smoke
name=receiptd-smoke-$$
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  echo "debootstrap: a minimal bookworm with the runtime libraries…"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase --include="$packages" \
    bookworm "$work/rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
  rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
  container=$(buildah from scratch)
  buildah copy "$container" "$work/rootfs" / >/dev/null
  buildah config --cmd /bin/bash "$container"
  buildah commit --quiet "$container" "$base" >/dev/null
  buildah rm "$container" >/dev/null
fi

echo "receiptd: release build on the host…"
bin=$("$root/Scripts/release-bin.sh")
mkdir -p "$root/.build-container"
cp "$bin/receiptd" "$root/.build-container/receiptd"

echo "buildah: the runtime stage on $base…"
buildah bud --quiet --pull=never --layers=false --format docker --target runtime \
  --build-arg RUNTIME_IMAGE="$base" --build-arg BINARY_STAGE=host-binary \
  -t "$image" -f "$root/Dockerfile" "$root" >/dev/null

port=$((20000 + RANDOM % 10000))
echo "podman: serving on 127.0.0.1:$port…"
podman run -d --name "$name" --pull=never --network host --no-healthcheck \
  -e RECEIPTD_HTTP_HOST=127.0.0.1 -e RECEIPTD_HTTP_PORT="$port" -e RECEIPTD_ENVIRONMENT=development -e RECEIPTD_REVENUE_CAT_PORT=0 \
  -e RECEIPTD_APP_STORE_SIMULATOR=true -e RECEIPTD_DATABASE_PATH=/var/lib/receiptd/smoke.sqlite \
  "$image" >/dev/null
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
health=$(curl -sf "http://127.0.0.1:$port/healthz") || { podman logs "$name" | tail -20; exit 1; }
echo "GET /healthz: $health"
receipt=$(printf 'active_monthly:container' | base64 -w0)
answer=$(curl -sf -X POST "http://127.0.0.1:$port/v1/receipts" -H 'Authorization: Bearer dev-public-key' \
  -d "{\"app_user_id\":\"container\",\"receipt_data\":\"$receipt\"}") || { podman logs "$name" | tail -20; exit 1; }
echo "$answer" | grep -q '"premium":{"active":true' || { echo "unexpected answer: $answer"; exit 1; }
echo "POST /v1/receipts: premium active"
# Read whole before looking: `curl | head -1` let head exit while curl still wrote, and under
# pipefail curl's EPIPE (exit 23) failed the check at random once the document passed 16 KiB.
spec=$(curl -sf "http://127.0.0.1:$port/openapi.yaml") || { echo "no /openapi.yaml"; exit 1; }
[[ "$spec" == "openapi: 3.1"* ]] || { echo "/openapi.yaml is not the OpenAPI document: ${spec:0:80}"; exit 1; }
podman stop --time 10 "$name" >/dev/null
status=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$status" = 0 ] || { echo "receiptd exited $status on SIGTERM"; podman logs "$name" | tail -20; exit 1; }
echo "container smoke test passed: stopped cleanly on SIGTERM (exit 0)"
