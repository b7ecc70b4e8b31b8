#!/usr/bin/env bash
# Builds the real Kubernetes binaries the tests and the local platform use, from the Go module
# proxy only, into _output/bin: kubectl, kube-apiserver and kube-controller-manager from
# k8s.io/kubernetes (hack/tools module), kube-scheduler likewise, etcd with etcdctl and etcdutl
# (hack/tools/etcd; they back up and restore it) and kwok (hack/tools/kwok), which turns fake
# nodes Ready so Pods run without containers, and Flux's source-controller and
# kustomize-controller (hack/tools/<name>, with their CRDs in _output/flux-crds). Each is
# rebuilt only when missing or older than its module's go.mod.
#   hack/build-tools.sh kubectl [kube-apiserver kube-controller-manager etcd etcdctl etcdutl]
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
    [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
    [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
    [kubelet]=k8s.io/kubernetes/cmd/kubelet
    [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
    [containerd]=github.com/containerd/containerd/v2/cmd/containerd
    [containerd-shim-runc-v2]=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
    [ctr]=github.com/containerd/containerd/v2/cmd/ctr
    [coredns]=github.com/plinth-dev/plinth/hack/tools/coredns
    [etcd]=go.etcd.io/etcd/server/v3
    [etcdctl]=go.etcd.io/etcd/etcdctl/v3
    [etcdutl]=go.etcd.io/etcd/etcdutl/v3
    [kwok]=sigs.k8s.io/kwok/cmd/kwok
    [source-controller]=github.com/fluxcd/source-controller
    [kustomize-controller]=github.com/fluxcd/kustomize-controller
)
# etcd and kwok have their own modules (hack/tools/etcd, hack/tools/kwok): k8s.io/kubernetes pins
# etcd's v3.7 client libraries while the server Plinth runs is v3.6 (etcdctl and etcdutl come
# from the same module, so a snapshot is saved and restored by the version that wrote it), and
# kwok pins its own k8s.io versions. containerd has its own (hack/tools/containerd): in this
# module it would raise the grpc, otel and containerd api versions k8s.io/kubernetes builds with.
# CoreDNS (hack/tools/coredns: its kubernetes, forward and cache plugins and a few more, the
# cluster DNS of the real node's pods) pins its own k8s.io client versions.
declare -A MODULES=(
    [etcd]=hack/tools/etcd
    [etcdctl]=hack/tools/etcd
    [etcdutl]=hack/tools/etcd
    [kwok]=hack/tools/kwok
    [containerd]=hack/tools/containerd
    [containerd-shim-runc-v2]=hack/tools/containerd
    [ctr]=hack/tools/containerd
    [coredns]=hack/tools/coredns
    [source-controller]=hack/tools/source-controller
    [kustomize-controller]=hack/tools/kustomize-controller
)
# containerd without cgo: btrfs, devmapper and zfs snapshotters need C libraries, and the real
# node uses overlayfs. The shim, like containerd's own release build, also leaves out grpc.
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs urfave_cli_no_docs"
# Flux's controllers (v1.9.6, the newest line that builds with this Go; see FACTS.md) have their
# own modules for their replace lines. kustomize imports Go's plugin package unless this tag is
# set, which forces external linking and keeps dead code.
declare -A TAGS=(
    [source-controller]=kustomize_disable_go_plugin_support
    [kustomize-controller]=kustomize_disable_go_plugin_support
    [containerd]="${CONTAINERD_TAGS}"
    [ctr]="${CONTAINERD_TAGS}"
    [containerd-shim-runc-v2]="${CONTAINERD_TAGS} no_grpc"
)
# Flux's controllers run as processes, not in pods: their leader election needs the namespace
# that a pod reads from its service-account mount. This patch (see the file) makes
# controller-runtime fall back to RUNTIME_NAMESPACE.
LEADER_ELECTION_PATCH="${ROOT}/hack/tools/leader-election-namespace.sed"
declare -A PATCHED=([source-controller]=1 [kustomize-controller]=1)

for tool in "$@"; do
    pkg=${PACKAGES[$tool]:-}
    if [ -z "${pkg}" ]; then
        echo "unknown tool ${tool}; known: ${!PACKAGES[*]}" >&2
        exit 2
    fi
    module="${ROOT}/${MODULES[$tool]:-hack/tools}"
    patched=${PATCHED[$tool]:-}
    if [ -x "${BIN}/${tool}" ] && [ "${BIN}/${tool}" -nt "${module}/go.mod" ] &&
        { [ -z "${patched}" ] || [ "${BIN}/${tool}" -nt "${LEADER_ELECTION_PATCH}" ]; }; then
        continue
    fi
    echo "building ${tool} from ${pkg}"
    modfile=()
    if [ -n "${patched}" ]; then
        # go build -overlay refuses files in the module cache: build against a patched copy of
        # controller-runtime instead, through a copy of the module's go.mod that replaces it. go list -m
        # names no directory for a module not downloaded yet (a clean module cache): download first.
        work="${ROOT}/_output/flux-build/${tool}"
        runtime_dir=$(cd "${module}" && go mod download sigs.k8s.io/controller-runtime && go list -m -f '{{.Dir}}' sigs.k8s.io/controller-runtime)
        rm -rf "${work}"
        mkdir -p "${work}"
        cp -r "${runtime_dir}" "${work}/controller-runtime"
        chmod -R u+w "${work}/controller-runtime"
        patched_file="${work}/controller-runtime/pkg/leaderelection/leader_election.go"
        sed -i -f "${LEADER_ELECTION_PATCH}" "${patched_file}"
        if cmp -s "${runtime_dir}/pkg/leaderelection/leader_election.go" "${patched_file}"; then
            echo "${LEADER_ELECTION_PATCH} does not apply to ${runtime_dir}" >&2
            exit 1
        fi
        cp "${module}/go.mod" "${module}/go.sum" "${work}/"
        echo "replace sigs.k8s.io/controller-runtime => ${work}/controller-runtime" >> "${work}/go.mod"
        modfile=(-modfile "${work}/go.mod")
    fi
    ldflags="${LDFLAGS}"
    if [ "${MODULES[$tool]:-}" = hack/tools/containerd ]; then
        # containerd reports its version over CRI (kubelet logs it and checks it is 2.x).
        version=$(cd "${module}" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
        ldflags="-X github.com/containerd/containerd/v2/version.Version=${version}"
    fi
    (cd "${module}" && CGO_ENABLED=0 go build "${modfile[@]}" -trimpath -tags "${TAGS[$tool]:-}" -ldflags "${ldflags}" -o "${BIN}/${tool}" "${pkg}")
done

# kwok needs stages that say how fake nodes and pods progress; use the ones kwok ships ("fast":
# nodes Ready at once with lease heartbeats, pods Ready as soon as they are scheduled).
for tool in "$@"; do
    if [ "${tool}" = kwok ] && [ ! -d "${ROOT}/_output/kwok-stages" ]; then
        kwok_dir=$(cd "${ROOT}/hack/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
        mkdir -p "${ROOT}/_output/kwok-stages"
        for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
                     pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
            cp "${kwok_dir}/kustomize/stage/${stage}.yaml" "${ROOT}/_output/kwok-stages/"
        done
        chmod u+w "${ROOT}/_output/kwok-stages/"*
    fi
done

# Flux's controllers need their CRDs, which their modules ship in config/crd/bases: copied to
# _output/flux-crds/<tool>/ with the module's version in a file named VERSION (the local platform
# labels the CRDs with it, as Flux's release manifests label them). Module files are read-only.
for tool in "$@"; do
    case "${tool}" in source-controller | kustomize-controller) ;; *) continue ;; esac
    crds="${ROOT}/_output/flux-crds/${tool}"
    module="${ROOT}/${MODULES[$tool]}"
    if [ -f "${crds}/VERSION" ] && [ "${crds}/VERSION" -nt "${module}/go.mod" ]; then
        continue
    fi
    read -r version dir < <(cd "${module}" && go list -m -f '{{.Version}} {{.Dir}}' "${PACKAGES[$tool]}")
    rm -rf "${crds}"
    mkdir -p "${crds}"
    cp "${dir}/config/crd/bases/"*.yaml "${crds}/"
    chmod u+w "${crds}/"*
    echo "${version}" > "${crds}/VERSION"
done
