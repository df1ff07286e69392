# cloudinfer: the CLI as a static binary on a distroless base, run as a
# non-root user. It is the image the Kubernetes workers run (deploy/kubernetes):
#   docker build -t REGISTRY/cloudinfer:TAG . && docker push REGISTRY/cloudinfer:TAG
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/cloudinfer ./cmd/cloudinfer

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cloudinfer /usr/local/bin/cloudinfer
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/cloudinfer"]
