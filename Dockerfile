# Image of lockstep-scheduler, for those who build with a container engine (make image builds
# the same image without one):
#   docker build --build-arg VERSION=$(hack/version.sh) --build-arg GIT_COMMIT=$(git rev-parse HEAD) \
#     --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) \
#     -t registry.example.com/lockstep-scheduler:$(hack/version.sh) .
FROM golang:1.26 AS build
ARG VERSION=v0.1.0-dev
ARG GIT_COMMIT=
ARG BUILD_DATE=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The flags of make image (Makefile: LDFLAGS, with -s -w and -trimpath): the same binary,
# down to the Kubernetes version component-base reports (the feature gates' emulation
# version follows it). test/image checks that the two keep the same -X flags.
RUN KUBE_VERSION=$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X github.com/lockstep-sched/lockstep/pkg/version.gitVersion=${VERSION} -X github.com/lockstep-sched/lockstep/pkg/version.gitCommit=${GIT_COMMIT} \
      -X github.com/lockstep-sched/lockstep/pkg/version.buildDate=${BUILD_DATE} \
      -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitCommit=${GIT_COMMIT} \
      -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=${BUILD_DATE}" \
    -o /lockstep-scheduler ./cmd/scheduler

FROM gcr.io/distroless/static:nonroot
ARG VERSION=v0.1.0-dev
LABEL org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.source=https://github.com/lockstep-sched/lockstep \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /lockstep-scheduler /lockstep-scheduler
USER 65532:65532
ENTRYPOINT ["/lockstep-scheduler"]
