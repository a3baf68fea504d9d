# lockstep — build, generate, verify and test. Every target does its own set-up: tools and
# etcd are built from the Go module proxy into bin/.
SHELL := /usr/bin/env bash -o errexit -o nounset -o pipefail
GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
# Integration tests start a kube-apiserver per scenario; give them room on small machines.
TEST_TIMEOUT ?= 30m
GOTESTFLAGS ?=

.PHONY: all build etcd generate verify vet fmt test test-unit test-integration run clean

all: build

## build: the scheduler binary, bin/lockstep-scheduler
build:
	$(GO) build -o $(BIN)/lockstep-scheduler ./cmd/scheduler

## etcd: the etcd the integration tests run (version pinned in go.mod)
etcd: $(BIN)/etcd
$(BIN)/etcd: go.mod
	$(GO) build -o $(BIN)/etcd go.etcd.io/etcd/server/v3

## generate: deepcopy, clientset, listers, informers (code-generator) and CRDs (controller-gen)
generate:
	./hack/update-codegen.sh

## verify: gofmt, go vet, and generated code and CRDs up to date
verify: fmt vet
	./hack/verify-codegen.sh

fmt:
	@out=$$(gofmt -l cmd pkg test hack); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## test: verify, then unit and integration tests (real kube-apiserver and etcd)
test: verify test-unit test-integration

test-unit:
	$(GO) test $(GOTESTFLAGS) ./cmd/... ./pkg/...

test-integration: etcd
	$(GO) test $(GOTESTFLAGS) -timeout $(TEST_TIMEOUT) ./test/...

## run: run the scheduler against the cluster of $KUBECONFIG (CRDs must be applied)
run: build
	./hack/run-local.sh

clean:
	rm -rf $(BIN)
