#!/usr/bin/env bash
# Fails when artifacts/deploy differs from what hack/update-deploy.sh renders from charts/plinth.
# The rendering goes to a scratch directory, so a failed check leaves the working tree untouched.
set -o errexit -o nounset -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

go run ./hack/render-deploy --chart charts/plinth --values charts/plinth/deploy-values.yaml --out "${SCRATCH}"
if ! diff -Nru artifacts/deploy "${SCRATCH}"; then
    echo "artifacts/deploy is out of date with charts/plinth: run hack/update-deploy.sh (make generate)." >&2
    exit 1
fi
