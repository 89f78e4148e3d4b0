# keeper: one static binary (pure-Go SQLite, no cgo) on a distroless base,
# running as the nonroot user.
#   docker build -t keeper .                   # production: cmd/keeperd, installed as keeper
#   docker build --target dev -t keeper:dev .  # the all-in-one dev stack: cmd/keeper
# The production image carries the worker, the API and the client and log
# commands, without the embedded Temporal server, the local chains or the
# benchmark (docs/architecture.md); `keeper dev` is in the dev image only.
FROM golang:1.26-bookworm AS source
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN mkdir -p /out/data

FROM source AS build-dev
RUN go build -trimpath -ldflags="-s -w" -o /out/keeper ./cmd/keeper

# `keeper dev` binds its API, Temporal server, Web UI and local chains to
# 127.0.0.1, as on a laptop: run it on the host's network to reach them
# (docker run --rm --network host keeper:dev).
FROM gcr.io/distroless/static-debian12:nonroot AS dev
COPY --from=build-dev /out/keeper /usr/local/bin/keeper
COPY --from=source --chown=65532:65532 /out/data /var/lib/keeper
WORKDIR /var/lib/keeper
ENV KEEPER_DATA_DIR=/var/lib/keeper
ENTRYPOINT ["/usr/local/bin/keeper"]
CMD ["dev"]

FROM source AS build
RUN go build -trimpath -ldflags="-s -w" -o /out/keeper ./cmd/keeperd

# The last stage is what `docker build` builds without --target.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/keeper /usr/local/bin/keeper
COPY --from=source --chown=65532:65532 /out/data /var/lib/keeper
# The data directory holds the EVM signer's nonce file and lock, and, without
# KEEPER_STORE_URL, keeper.db.
WORKDIR /var/lib/keeper
ENV KEEPER_DATA_DIR=/var/lib/keeper
EXPOSE 8081
ENTRYPOINT ["/usr/local/bin/keeper"]
CMD ["--help"]
