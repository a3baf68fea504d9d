# Image of lockstep-scheduler (build where a container engine is available):
#   docker build -t ghcr.io/lockstep-sched/lockstep-scheduler:v0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /lockstep-scheduler ./cmd/scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /lockstep-scheduler /lockstep-scheduler
USER 65532:65532
ENTRYPOINT ["/lockstep-scheduler"]
