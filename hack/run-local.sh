#!/usr/bin/env bash
# Runs bin/lockstep-scheduler against the cluster of $KUBECONFIG (default ~/.kube/config)
# with manifests/scheduler-config.yaml, leader election off. The CRDs must be installed:
#   kubectl apply -f manifests/crds/
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
KUBECONFIG_FILE="${KUBECONFIG:-${HOME}/.kube/config}"
if [ ! -f "${KUBECONFIG_FILE}" ]; then
  echo "no kubeconfig at ${KUBECONFIG_FILE}; set KUBECONFIG" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
# The config file's clientConnection.kubeconfig is how kube-scheduler finds a cluster when
# --config is given; write a copy of the shipped config pointing at this kubeconfig.
{
  echo "clientConnection:"
  echo "  kubeconfig: ${KUBECONFIG_FILE}"
  sed -e 's/^  leaderElect: true/  leaderElect: false/' "${ROOT}/manifests/scheduler-config.yaml"
} > "${work}/scheduler-config.yaml"
exec "${ROOT}/bin/lockstep-scheduler" --config="${work}/scheduler-config.yaml" --secure-port=10269 "$@"
