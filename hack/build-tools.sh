#!/usr/bin/env bash
# Builds the real Kubernetes binaries the tests and the local platform use, from the Go module
# proxy only, into _output/bin: kubectl and kube-apiserver from k8s.io/kubernetes (hack/tools
# module). Each is rebuilt only when missing or when hack/tools/go.mod changed.
#   hack/build-tools.sh kubectl [kube-apiserver ...]
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="${ROOT}/_output/bin"
mkdir -p "${BIN}"

KUBE_VERSION=v1.37.1
LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=37"
    LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

declare -A PACKAGES=(
    [kubectl]=k8s.io/kubernetes/cmd/kubectl
    [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
)

for tool in "$@"; do
    pkg=${PACKAGES[$tool]:-}
    if [ -z "${pkg}" ]; then
        echo "unknown tool ${tool}; known: ${!PACKAGES[*]}" >&2
        exit 2
    fi
    if [ -x "${BIN}/${tool}" ] && [ "${BIN}/${tool}" -nt "${ROOT}/hack/tools/go.mod" ]; then
        continue
    fi
    echo "building ${tool} ${KUBE_VERSION} from ${pkg}"
    (cd "${ROOT}/hack/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "${LDFLAGS}" -o "${BIN}/${tool}" "${pkg}")
done
