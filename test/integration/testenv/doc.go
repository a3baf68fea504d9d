// Package testenv runs lockstep's integration tests against real components: etcd (built
// from the module proxy), an in-process kube-apiserver, lockstep's CRDs from manifests/crds
// and the lockstep scheduler started exactly as the binary starts it, with the profile
// from manifests/scheduler-config.yaml.
package testenv
