#!/usr/bin/env bash
# Generates deepcopy, clientset, listers and informers (k8s.io/code-generator, versions from
# go.mod), the CRDs (controller-gen, copied into the chart) and the API and configuration
# references (hack/apidocs, hack/metricsdocs). Run through `make generate`.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "${ROOT}"
MODULE="$(go list -m)"
TOOLS="${ROOT}/bin/tools"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"

mkdir -p "${TOOLS}"
for gen in deepcopy-gen defaulter-gen conversion-gen client-gen lister-gen informer-gen; do
  go build -o "${TOOLS}/${gen}" "k8s.io/code-generator/cmd/${gen}"
done
if ! "${TOOLS}/controller-gen" --version 2>/dev/null | grep -q "${CONTROLLER_GEN_VERSION}"; then
  GOBIN="${TOOLS}" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}"
fi

API="${MODULE}/pkg/apis/scheduling/v1alpha1"
CONFIG="${MODULE}/pkg/apis/config"
OUT="pkg/generated"

rm -f pkg/apis/scheduling/v1alpha1/zz_generated.*.go pkg/apis/config/zz_generated.*.go pkg/apis/config/v1/zz_generated.*.go
"${TOOLS}/deepcopy-gen" --go-header-file "${BOILERPLATE}" --output-file zz_generated.deepcopy.go \
  "${API}" "${CONFIG}" "${CONFIG}/v1"
"${TOOLS}/defaulter-gen" --go-header-file "${BOILERPLATE}" --output-file zz_generated.defaults.go \
  "${CONFIG}/v1"
"${TOOLS}/conversion-gen" --go-header-file "${BOILERPLATE}" --output-file zz_generated.conversion.go \
  "${CONFIG}/v1"

rm -rf "${OUT}"
"${TOOLS}/client-gen" --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT}/clientset" --output-pkg "${MODULE}/${OUT}/clientset" \
  --clientset-name versioned --input-base "${MODULE}/pkg/apis" --input scheduling/v1alpha1
"${TOOLS}/lister-gen" --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT}/listers" --output-pkg "${MODULE}/${OUT}/listers" "${API}"
"${TOOLS}/informer-gen" --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT}/informers" --output-pkg "${MODULE}/${OUT}/informers" \
  --versioned-clientset-package "${MODULE}/${OUT}/clientset/versioned" \
  --listers-package "${MODULE}/${OUT}/listers" "${API}"

rm -rf manifests/crds
"${TOOLS}/controller-gen" crd:crdVersions=v1 paths=./pkg/apis/scheduling/... output:crd:dir=./manifests/crds
# The chart installs the same CRDs (Helm applies a chart's crds/ before its templates).
rm -rf charts/lockstep/crds
cp -r manifests/crds charts/lockstep/crds
# The API and configuration references, from the types' doc comments.
go run ./hack/apidocs -out docs/reference
go run ./hack/metricsdocs -out docs/reference/metrics.md
# The chart's alerts and dashboard are manifests/monitoring's.
mkdir -p charts/lockstep/files
cp manifests/monitoring/alerts.yaml manifests/monitoring/grafana-dashboard.json charts/lockstep/files/
