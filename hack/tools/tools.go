//go:build tools

// Package tools pins the build-time tools (code generators, etcd, and the control plane of
// the local demo cluster) in go.mod, so that `go build` of their commands uses the exact
// versions the project was tested with.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/client-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/informer-gen"
	_ "k8s.io/code-generator/cmd/lister-gen"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
