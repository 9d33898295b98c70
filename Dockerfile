# syntax=docker/dockerfile:1
# The one Trawler image: every service is a subcommand of the same static
# binary (trawler fetcher|parser|dedup|frontier|seed|status).
#
#   docker build -t trawler:dev .
#   docker run --rm trawler:dev help

# Build stage: a static binary (CGO_ENABLED=0: no libc, runs on scratch or
# distroless), cross-compiled on the build host for the target platform.
ARG GO_VERSION=1.26.8
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Set by BuildKit (the Dockerfile needs it for RUN --mount) from --platform.
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/trawler ./cmd/trawler

# Run stage: distroless "static" has CA certificates (the fetcher speaks
# HTTPS), tzdata and a nonroot user (65532), and no shell or package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/trawler /usr/local/bin/trawler
USER 65532:65532
# Metrics, /healthz and /readyz when run with --metrics-addr :9090 (the chart does).
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/trawler"]
CMD ["help"]
