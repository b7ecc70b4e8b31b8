#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated.* helpers of pkg/apis with
# k8s.io/code-generator's kube_codegen.sh, at the version go.mod requires.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${SCRIPT_ROOT}"
THIS_PKG="github.com/plinth-dev/plinth"
# go list -m names no directory for a module that is not downloaded yet (a fresh machine).
if [ -z "${CODEGEN_PKG:-}" ]; then
    go mod download k8s.io/code-generator
    CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
fi
export GOBIN="${GOBIN:-${SCRIPT_ROOT}/_output/codegen-bin}"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

BOILERPLATE="${SCRIPT_ROOT}/hack/boilerplate.go.txt"
REPORT="${SCRIPT_ROOT}/hack/api-rule-violations.list"

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${SCRIPT_ROOT}/pkg/apis"

# The known-violations list keeps openapi-gen's API-rule check honest: new violations fail the
# build; UPDATE_API_KNOWN_VIOLATIONS=true accepts the current set.
kube::codegen::gen_openapi \
    --output-dir "${SCRIPT_ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --report-filename "${REPORT}" \
    --output-model-name-file "zz_generated.model_name.go" \
    ${UPDATE_API_KNOWN_VIOLATIONS:+--update-report} \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

# kube_codegen.sh's gen_client only picks up versions shaped like v1, v1alpha1 or v1beta1, and
# Score's version is v1b1, so the client generators run here directly with the same arguments
# gen_client would pass.
OUT_DIR="${SCRIPT_ROOT}/pkg/generated"
OUT_PKG="${THIS_PKG}/pkg/generated"
GROUP_VERSIONS=(score/v1b1 governance/v1alpha1 platform/v1alpha1 compute/v1alpha1 gitops/v1alpha1 infrastructure/v1alpha1)
INPUT_PKGS=()
CLIENT_INPUTS=()
for gv in "${GROUP_VERSIONS[@]}"; do
    INPUT_PKGS+=("${THIS_PKG}/pkg/apis/${gv}")
    CLIENT_INPUTS+=(--input "${gv}")
done
(cd "${CODEGEN_PKG}" && GO111MODULE=on go install \
    k8s.io/code-generator/cmd/{applyconfiguration-gen,client-gen,lister-gen,informer-gen})
rm -rf "${OUT_DIR}/applyconfiguration" "${OUT_DIR}/clientset" "${OUT_DIR}/listers" "${OUT_DIR}/informers"

SCHEMA_FILE=$(mktemp)
trap 'rm -f "${SCHEMA_FILE}"' EXIT
go run "${THIS_PKG}/pkg/generated/openapi/cmd/models-schema" > "${SCHEMA_FILE}"

echo "Generating applyconfigurations, clientset, listers and informers for ${GROUP_VERSIONS[*]}"
"${GOBIN}/applyconfiguration-gen" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${OUT_DIR}/applyconfiguration" \
    --output-pkg "${OUT_PKG}/applyconfiguration" \
    --openapi-schema "${SCHEMA_FILE}" \
    "${INPUT_PKGS[@]}"
"${GOBIN}/client-gen" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${OUT_DIR}/clientset" \
    --output-pkg "${OUT_PKG}/clientset" \
    --clientset-name versioned \
    --apply-configuration-package "${OUT_PKG}/applyconfiguration" \
    --input-base "${SCRIPT_ROOT}/pkg/apis" \
    "${CLIENT_INPUTS[@]}"
"${GOBIN}/lister-gen" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${OUT_DIR}/listers" \
    --output-pkg "${OUT_PKG}/listers" \
    "${INPUT_PKGS[@]}"
"${GOBIN}/informer-gen" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${OUT_DIR}/informers" \
    --output-pkg "${OUT_PKG}/informers" \
    --versioned-clientset-package "${OUT_PKG}/clientset/versioned" \
    --listers-package "${OUT_PKG}/listers" \
    "${INPUT_PKGS[@]}"
