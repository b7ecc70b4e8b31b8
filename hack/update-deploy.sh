#!/usr/bin/env bash
# Renders artifacts/deploy from the Helm chart charts/plinth with charts/plinth/deploy-values.yaml
# (hack/render-deploy): edit the chart, never the artifacts, then run this (make generate).
set -o errexit -o nounset -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./hack/render-deploy --chart charts/plinth --values charts/plinth/deploy-values.yaml --out artifacts/deploy
