#!/usr/bin/env bash
# Fails if `make generate` would change anything: generated code and CRDs are committed and
# must match the API types.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "${ROOT}"
paths=(pkg/generated pkg/apis manifests/crds manifests/monitoring charts/lockstep/crds charts/lockstep/files docs/reference)
before="$(git status --porcelain -- "${paths[@]}")"
./hack/update-codegen.sh
after="$(git status --porcelain -- "${paths[@]}")"
if [ "${before}" != "${after}" ]; then
  echo "Generated code, CRDs or references are out of date; run 'make generate' and commit:" >&2
  git status --porcelain -- "${paths[@]}" >&2
  git diff --stat -- "${paths[@]}" >&2
  exit 1
fi
echo "Generated code, CRDs and references are up to date."
