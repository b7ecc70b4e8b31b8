#!/usr/bin/env bash
# Installs, from Debian's packages, what the local platform's real node runs beside the
# binaries hack/build-tools.sh builds: runc (containerd's runtime), the CNI plugins (bridge,
# host-local; in /usr/lib/cni), iptables (kube-proxy and the bridge's masquerading) and
# conntrack (kube-proxy clears stale UDP entries with it). Nothing is done when all are there.
set -o errexit -o nounset -o pipefail

packages=(runc containernetworking-plugins iptables conntrack)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "the real node needs these Debian packages: ${missing[*]} (apt-get install them as root)" >&2
    exit 1
fi
echo "installing ${missing[*]} for the real node"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
