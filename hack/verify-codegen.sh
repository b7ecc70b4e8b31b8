#!/usr/bin/env bash
# Fails when checked-in generated code differs from what hack/update-codegen.sh produces.
# Generation runs on a scratch copy, so a failed check leaves the working tree untouched.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

cd "${SCRIPT_ROOT}"
tar cf - go.mod go.sum hack pkg | (cd "${SCRATCH}" && tar xf -)
GOBIN="${SCRIPT_ROOT}/_output/codegen-bin" "${SCRATCH}/hack/update-codegen.sh" >/dev/null

status=0
for dir in pkg hack/api-rule-violations.list; do
    if ! diff -Nru "${SCRIPT_ROOT}/${dir}" "${SCRATCH}/${dir}"; then
        status=1
    fi
done
if [ "${status}" -ne 0 ]; then
    echo "Generated code is out of date: run hack/update-codegen.sh (make generate)." >&2
fi
exit "${status}"
