# syntax=docker/dockerfile:1
# Images of the three services. One build stage compiles all of them; each service is a target:
#   docker build --target ingress  -t apps/ingress .
#   docker build --target pipeline -t apps/pipeline .
#   docker build --target runner   -t apps/runner .
# (without --target the last stage, ingress, is built). docker-compose.yml builds all three.

# ---- build ----------------------------------------------------------------------------------
FROM rust:1.95-bookworm AS builder

# What the native parts of the build need, on top of the compiler, make and headers of the
# rust:bookworm image (Cargo.lock, default features):
# - rdkafka-sys builds librdkafka with its own ./configure + make (not the cmake-build feature),
#   passing --disable-ssl --disable-gssapi --disable-curl --disable-zstd: the only library it
#   links is zlib (libz-sys, found with pkg-config; libz.so.1 is part of debian:bookworm-slim).
# - aws-lc-sys (the rustls provider of aws-sdk-s3's default https client) compiles AWS-LC with
#   cc from pregenerated sources on x86_64/aarch64 Linux; cmake is its fallback builder, hence
#   kept. No Perl, Go or NASM needed. ring (reqwest's rustls) needs only cc.
# Nothing links OpenSSL, Cyrus SASL or libcurl: no openssl-sys, sasl2-sys or curl-sys in Cargo.lock.
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake pkg-config zlib1g-dev \
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

# ---- catalogue ------------------------------------------------------------------------------
# The platform versions this release ships (APP_CATALOGUE_DIR): the example app, built from its
# AssemblyScript sources with the toolchain its package-lock.json pins.
FROM node:20-bookworm-slim AS catalogue
WORKDIR /app
COPY runner/examples/vendor-app/package.json runner/examples/vendor-app/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY runner/examples/vendor-app/ ./
RUN npm run --silent build \
 && mkdir -p /catalogue \
 && cp build/vendor-app.wasm /catalogue/

# ---- runtime --------------------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime

# ca-certificates: the S3 client (rustls with the platform's roots) for an https endpoint.
# curl only serves the container healthchecks. The binaries need nothing else beyond glibc,
# libgcc and zlib, which the slim image has.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --no-create-home --shell /usr/sbin/nologin app

COPY --from=builder /out/ingress /out/pipeline /out/runner /usr/local/bin/

USER app:app
ENV LOG_LEVEL=info

# ---- one target per service -----------------------------------------------------------------
# SIGTERM starts a graceful stop: ingress and the runner drain requests for up to
# SHUTDOWN_GRACE_SECONDS (30), ingress then flushes its producer (up to 5 s); give the container
# longer than that before SIGKILL (docker-compose.yml: stop_grace_period).

FROM runtime AS pipeline
ENV WORKER_HEALTH_PORT=8082
EXPOSE 8082
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${WORKER_HEALTH_PORT}/health/ready" || exit 1
CMD ["pipeline"]

FROM runtime AS runner
# Compiled modules are kept across restarts in RUNNER_MODULE_CACHE_DIR. The runner runs what it
# finds there, so it uses the directory only when it is a real directory (not a symlink) owned by
# its own user and not writable by group or others (runner/src/module_cache.rs); else it logs a
# warning and recompiles every module. Made here, owned by app, mode 0700: a named volume mounted
# on it starts as a copy of it, owner and mode included.
USER root
RUN mkdir -p /var/cache/apps-runner/modules \
 && chown app:app /var/cache/apps-runner/modules \
 && chmod 0700 /var/cache/apps-runner/modules
USER app:app
ENV RUNNER_HOST=0.0.0.0 RUNNER_PORT=8090 RUNNER_MODULE_CACHE_DIR=/var/cache/apps-runner/modules
EXPOSE 8090
# Liveness, not readiness: the runner is ready only once the API's internal listener answers
# (API_INTERNAL_URL), and the API may itself wait for the runner to be healthy.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${RUNNER_PORT}/health" || exit 1
CMD ["runner"]

FROM runtime AS ingress
# At start-up the API publishes the modules of this folder as platform versions and withdraws
# those the release no longer carries.
COPY --from=catalogue /catalogue/ /usr/share/apps-platform/catalogue/
ENV API_HOST=0.0.0.0 API_PORT=8080 API_INTERNAL_PORT=8081 \
    APP_CATALOGUE_DIR=/usr/share/apps-platform/catalogue
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=6 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${API_PORT}/health/ready" || exit 1
CMD ["ingress"]
