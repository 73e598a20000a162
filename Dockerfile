# syntax=docker/dockerfile:1
# Images of the three services. One build stage compiles all of them; each service is a target:
#   docker build --target ingress  -t apps/ingress .
#   docker build --target pipeline -t apps/pipeline .
#   docker build --target runner   -t apps/runner .
# (without --target the last stage, ingress, is built). docker-compose.yml builds all three.

# ---- build ----------------------------------------------------------------------------------
FROM rust:1.95-bookworm AS builder

# librdkafka is compiled from source by rdkafka-sys (cmake, sasl, ssl, zlib, curl headers).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake libssl-dev libsasl2-dev pkg-config zlib1g-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

# The cache mounts keep the crate registry and the target directory between builds; the binaries
# are copied out of the (cached, hence not in the image) target directory.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p ingress -p pipeline -p runner \
 && mkdir -p /out \
 && cp target/release/ingress target/release/pipeline target/release/runner /out/

# ---- runtime --------------------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime

# curl only serves the container healthchecks.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 libsasl2-2 libcurl4 curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --no-create-home --shell /usr/sbin/nologin app

COPY --from=builder /out/ingress /out/pipeline /out/runner /usr/local/bin/

USER app:app
ENV LOG_LEVEL=info

# ---- one target per service -----------------------------------------------------------------
FROM runtime AS pipeline
ENV WORKER_HEALTH_PORT=8082
EXPOSE 8082
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${WORKER_HEALTH_PORT}/health/ready" || exit 1
CMD ["pipeline"]

FROM runtime AS runner
ENV RUNNER_HOST=0.0.0.0 RUNNER_PORT=8090
EXPOSE 8090
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${RUNNER_PORT}/health/ready" || exit 1
CMD ["runner"]

FROM runtime AS ingress
ENV API_HOST=0.0.0.0 API_PORT=8080 API_INTERNAL_PORT=8081
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${API_PORT}/health/ready" || exit 1
CMD ["ingress"]
