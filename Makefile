# lockstep — build, generate, verify and test. Every target does its own set-up: tools and
# etcd are built from the Go module proxy into bin/.
SHELL := /usr/bin/env bash -o errexit -o nounset -o pipefail
GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
# Everything make builds and tests is built static, as the image's binary is: the tests run
# what ships, and make test compiles Kubernetes' packages once for the tests, the binaries and
# the image (which adds only -trimpath, IMAGE_BUILDFLAGS, for release builds).
export CGO_ENABLED ?= 0
# Integration tests start a kube-apiserver per scenario; give them room on small machines.
TEST_TIMEOUT ?= 30m
GOTESTFLAGS ?=

KWOK_VERSION ?= v0.8.0

# The version stamped into every binary make builds and into the image's labels and tag
# (hack/version.sh: the release tag at HEAD, else a pre-release of the next one), the commit
# and its date (the build date, so that the same commit gives the same bytes).
ifeq ($(origin VERSION),undefined)
VERSION := $(shell ./hack/version.sh)
endif
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD 2>/dev/null || echo 1970-01-01T00:00:00Z)
MODULE := github.com/lockstep-sched/lockstep
# component-base's version names the Kubernetes framework the scheduler is built from (the
# feature gates' emulation version follows it); lockstep's own is in pkg/version.
KUBE_VERSION = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
LDFLAGS = -X $(MODULE)/pkg/version.gitVersion=$(VERSION) -X $(MODULE)/pkg/version.gitCommit=$(GIT_COMMIT) \
	-X $(MODULE)/pkg/version.buildDate=$(BUILD_DATE) \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitCommit=$(GIT_COMMIT) \
	-X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=$(BUILD_DATE)

# The demo's control plane reports its release as a cluster's does (Helm checks the chart's
# kubeVersion against it).
KUBE_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitTreeState=clean

# The image: its repository, platforms and the OCI archive make image writes.
IMAGE ?= ghcr.io/lockstep-sched/lockstep-scheduler
PLATFORMS ?= linux/amd64 linux/arm64
# -trimpath: the image's binary holds no path of the machine that built it.
IMAGE_BUILDFLAGS ?= -trimpath
IMAGE_TAR ?= $(CURDIR)/_output/lockstep-scheduler-$(VERSION).oci.tar

.PHONY: soak all build image print-platforms test-image helm test-chart etcd generate verify vet fmt test test-unit test-integration controllers run clean \
	demo demo-down demo-test demo-core demo-controllers demo-binaries bench bench-perf bench-perf-huge bench-waiting

all: build

## build: the scheduler binary, bin/lockstep-scheduler, and the kubectl plugin
build:
	@echo "==> building lockstep-scheduler and kubectl-lockstep (on an empty Go cache: the Go modules downloaded, then minutes of compiling)"
	@hack/progress.sh lockstep-scheduler $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/lockstep-scheduler ./cmd/scheduler
	@hack/progress.sh kubectl-lockstep $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-lockstep ./cmd/kubectl-lockstep

## image: the scheduler's OCI image for $(PLATFORMS) (the static binary alone, non-root), built
## without a container engine into $(IMAGE_TAR), tagged $(IMAGE):$(VERSION); push it with
## `skopeo copy --all oci-archive:FILE docker://REF` (docs/install.md)
image:
	@for p in $(PLATFORMS); do \
	  echo "==> lockstep-scheduler for $$p"; \
	  CGO_ENABLED=0 GOOS=$${p%%/*} GOARCH=$${p#*/} $(GO) build $(IMAGE_BUILDFLAGS) -ldflags "-s -w $(LDFLAGS)" \
	    -o $(CURDIR)/_output/image/$${p/\//_}/lockstep-scheduler ./cmd/scheduler; \
	done
	cd tools/image && $(GO) run . -out $(abspath $(IMAGE_TAR)) -tag $(IMAGE):$(VERSION) -version $(VERSION) \
	  -revision $(GIT_COMMIT) -created $(BUILD_DATE) \
	  $(foreach p,$(PLATFORMS),-binary $(p)=$(CURDIR)/_output/image/$(subst /,_,$(p))/lockstep-scheduler)
	@echo "==> $(IMAGE):$(VERSION) in $(abspath $(IMAGE_TAR))"

# print-platforms: the platforms make image builds (test/image reads them)
print-platforms:
	@echo $(PLATFORMS)

## demo: a local cluster on 127.0.0.1 (control plane from k8s.io/kubernetes, KWOK nodes,
## lockstep) running the examples of manifests/examples; it keeps running
demo: demo-core
	@echo "==> building the demo's driver (hack/demo)"
	@hack/progress.sh "the demo's driver" $(GO) build -o $(BIN)/lockstep-demo ./hack/demo
	$(BIN)/lockstep-demo up

## demo-down: stop everything make demo started
demo-down:
	$(GO) run ./hack/demo down

## demo-test: bring the demo up, check every example's outcome, tear it down
demo-test: demo-binaries
	$(GO) test -count=1 -timeout 20m ./test/e2e/...

## demo-core: what the demo's first stage runs: lockstep, etcd, Helm, kube-apiserver,
## kube-controller-manager, kubectl (from k8s.io/kubernetes) and KWOK
demo-core: build etcd helm
	@echo "==> building kube-apiserver, kube-controller-manager and kubectl from k8s.io/kubernetes (the longest part of a first build)"
	@hack/progress.sh kube-apiserver $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	@hack/progress.sh kube-controller-manager $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
	@hack/progress.sh kubectl $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/kubectl k8s.io/kubernetes/cmd/kubectl
	@echo "==> building KWOK $(KWOK_VERSION)"
	@[ -x $(BIN)/kwok ] && $(BIN)/kwok --version 2>/dev/null | grep -q "$(KWOK_VERSION:v%=%)" || GOBIN=$(BIN) hack/progress.sh kwok $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

## demo-controllers: the JobSet, Kueue, LeaderWorkerSet and KubeRay controllers of the demo's
## second stage (make demo builds them while the first stage's gangs run)
demo-controllers:
	@echo "==> building the JobSet controller from tools/controllers (its own module)"
	@cd tools/controllers && ../../hack/progress.sh jobset-controller $(GO) build -o $(BIN)/jobset-controller sigs.k8s.io/jobset
	@echo "==> building the Kueue controller manager from tools/kueue (its own module)"
	@cd tools/kueue && ../../hack/progress.sh kueue-controller-manager $(GO) build -o $(BIN)/kueue-controller-manager sigs.k8s.io/kueue/cmd/kueue
	@echo "==> building the LeaderWorkerSet controller and the KubeRay operator from tools/lws-kuberay (their own module)"
	@cd tools/lws-kuberay && ../../hack/progress.sh lws-controller $(GO) build -o $(BIN)/lws-controller sigs.k8s.io/lws/cmd
	@cd tools/lws-kuberay && ../../hack/progress.sh kuberay-operator $(GO) build -o $(BIN)/kuberay-operator github.com/ray-project/kuberay/ray-operator

demo-binaries: demo-core demo-controllers

## controllers: the upstream JobSet, Kubeflow Trainer, Kueue, LeaderWorkerSet and KubeRay
## controllers the integration tests run, built before the tests start so that their
## compilation does not compete with timed scenarios (Kueue, LWS and KubeRay each from a module
## of its own, tools/kueue and tools/lws-kuberay: their Kubernetes versions differ)
controllers:
	cd tools/controllers && $(GO) build -o $(BIN)/jobset-controller sigs.k8s.io/jobset
	cd tools/controllers && $(GO) build -o $(BIN)/trainer-controller-manager github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
	cd tools/kueue && $(GO) build -o $(BIN)/kueue-controller-manager sigs.k8s.io/kueue/cmd/kueue
	cd tools/lws-kuberay && $(GO) build -o $(BIN)/lws-controller sigs.k8s.io/lws/cmd
	cd tools/lws-kuberay && $(GO) build -o $(BIN)/kuberay-operator github.com/ray-project/kuberay/ray-operator

## etcd: the etcd the integration tests run (version pinned in go.mod)
etcd: $(BIN)/etcd
$(BIN)/etcd: go.mod
	@echo "==> building etcd"
	@hack/progress.sh etcd $(GO) build -o $(BIN)/etcd go.etcd.io/etcd/server/v3

## generate: deepcopy, clientset, listers, informers (code-generator) and CRDs (controller-gen)
generate:
	./hack/update-codegen.sh

## verify: gofmt, go vet, and generated code and CRDs up to date
verify: fmt vet
	./hack/verify-codegen.sh

fmt:
	@out=$$(gofmt -l cmd pkg test hack internal); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## test: verify, unit and integration tests (real kube-apiserver and etcd), the short
## benchmarks (so that the harness cannot rot), the demo smoke test, the chart's and the image's tests
test: verify test-unit test-chart test-integration bench demo-test test-image

## helm: the Helm CLI (from tools/helm, its own module) the chart's tests use
helm:
	@echo "==> building Helm from tools/helm (its own module)"
	@cd tools/helm && ../../hack/progress.sh helm $(GO) build -o $(BIN)/helm helm.sh/helm/v4/cmd/helm

## test-chart: helm lint, and the chart rendered against manifests/ and its values
test-chart: helm
	$(GO) test -count=1 ./test/chart/...

## test-image: build the image and check it from outside (config, labels, the binary in it)
test-image:
	$(GO) test -count=1 -timeout 20m ./test/image/...

test-unit:
	$(GO) test $(GOTESTFLAGS) ./cmd/... ./pkg/... ./hack/...

SOAK_SEEDS ?= 30000
## soak: the group model's seeded randomized tests, longer: SOAK_SEEDS sequences of gangs' lives
## (restarts, late writes, binds refused, nodes lost, preemptions) and of members' admissions
## (make test runs 300 and 3000), and the 100,000-gang soaks (the model; the whole components)
soak:
	LIFE_SEEDS=$(SOAK_SEEDS) INVARIANT_SEEDS=$(SOAK_SEEDS) $(GO) test -count=1 -timeout 2h \
		-run '^(TestLifeInvariants|TestGroupModelInvariants|TestSoakKeepsNothingPerGangThatRan|TestSoakOfTheSchedulersComponents)$$' \
		./pkg/podgroup/ ./pkg/plugins/topology/

test-integration: etcd controllers
	$(GO) test $(GOTESTFLAGS) -timeout $(TEST_TIMEOUT) $$($(GO) list ./test/integration/... | grep -v scheduler_perf)

BENCH_DIR ?= $(CURDIR)/_output/bench
BENCH ?= BenchmarkPerfScheduling
PERF_FLAGS = -run '^Test' -bench '$(BENCH)' -benchtime=1x

## bench: the short scheduler_perf workloads (10-100 nodes) of every mode, and their table
bench: etcd
	rm -rf $(BENCH_DIR)/short
	$(GO) test ./test/integration/scheduler_perf/ $(PERF_FLAGS) -timeout 60m \
		-args -perf-scheduling-label-filter=short -data-items-dir=$(BENCH_DIR)/short
	$(GO) run ./hack/benchtable $(BENCH_DIR)/short

## bench-perf: the 5000- to 15,000-node workloads (about 80 minutes on 2 cores), with CPU and
## heap profiles of each (the table's scheduler CPU and heap columns); table in $(BENCH_DIR)/perf
bench-perf: etcd
	rm -rf $(BENCH_DIR)/perf
	$(GO) test ./test/integration/scheduler_perf/ $(PERF_FLAGS) -timeout 6h \
		-args -perf-scheduling-label-filter=performance -data-items-dir=$(BENCH_DIR)/perf -perf-cpuprofile -perf-memprofile
	$(GO) run ./hack/benchtable $(BENCH_DIR)/perf | tee $(BENCH_DIR)/perf/table.md

## bench-perf-huge: the gang and rack-required shapes at 65,000 nodes (plain, native, lockstep;
## the scheduler and the apiserver on this machine), with CPU and heap profiles; compare with the
## 15,000-node rows of bench-perf. Table in $(BENCH_DIR)/huge. Not run in CI.
bench-perf-huge: etcd
	rm -rf $(BENCH_DIR)/huge
	$(GO) test ./test/integration/scheduler_perf/ $(PERF_FLAGS) -timeout 6h \
		-args -perf-scheduling-label-filter=huge -data-items-dir=$(BENCH_DIR)/huge -perf-cpuprofile -perf-memprofile
	$(GO) run ./hack/benchtable $(BENCH_DIR)/huge | tee $(BENCH_DIR)/huge/table.md

## bench-waiting: what waiting costs (issue 34): 100, 1000 and (lockstep only) 10,000 gangs that
## cannot fit at 5000 nodes, 100 at 1000 and 15,000 nodes, and (lockstep only) 1000 gangs of 8-64
## pods at 15,000 nodes, lockstep, native and plain, and (lockstep only) 100 rack-required gangs
## holding a reservation at 5000 and 15,000 nodes, each measured over 60 s of churn with CPU and
## heap profiles; per-minute table in $(BENCH_DIR)/waiting. Plain and native at 10,000 gangs and
## at 8-64 pods a gang carry the label waiting-10k (their barrier outlasts scheduler_perf's 10 min).
bench-waiting: etcd
	rm -rf $(BENCH_DIR)/waiting
	$(GO) test ./test/integration/scheduler_perf/ $(PERF_FLAGS) -timeout 6h \
		-args -perf-scheduling-label-filter=waiting -data-items-dir=$(BENCH_DIR)/waiting -perf-cpuprofile -perf-memprofile
	$(GO) run ./hack/benchtable $(BENCH_DIR)/waiting | tee $(BENCH_DIR)/waiting/table.md

## run: run the scheduler against the cluster of $KUBECONFIG (CRDs must be applied)
run: build
	./hack/run-local.sh

clean:
	rm -rf $(BIN)
