# keeper: one static binary (pure-Go SQLite, no cgo) on a distroless base.
#   docker build -t keeper .
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/keeper ./cmd/keeper && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/keeper /usr/local/bin/keeper
COPY --from=build --chown=65532:65532 /out/data /var/lib/keeper
# The data directory holds the EVM signer's nonce file and lock, and, without
# KEEPER_STORE_URL, keeper.db.
WORKDIR /var/lib/keeper
ENV KEEPER_DATA_DIR=/var/lib/keeper
EXPOSE 8081
ENTRYPOINT ["/usr/local/bin/keeper"]
CMD ["--help"]
