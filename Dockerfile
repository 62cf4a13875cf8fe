# syntax=docker/dockerfile:1
# The rvsync-slo exporter image: a static binary on distroless, run as the
# nonroot user (65532), as the chart's securityContext expects.
#
#   docker build -t ghcr.io/rvsync-slo/rvsync-slo:$(git describe --tags --always) \
#     --build-arg VERSION=$(git describe --tags --always) --build-arg REVISION=$(git rev-parse HEAD) .

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION=dev
ARG REVISION=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/exporter ./cmd/exporter

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
# the labels of the release's images (hack/tools/image -label, .goreleaser.yaml)
LABEL org.opencontainers.image.title=rvsync-slo \
      org.opencontainers.image.source=https://github.com/rvsync-slo/rvsync-slo \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/exporter /exporter
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/exporter"]
