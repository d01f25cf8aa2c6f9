# receiptd container: build with the Swift toolchain image, run on slim Debian with only the
# runtime libraries. Base images are build arguments so a local mirror or registry can be named.
#   docker build -t receiptd .                      # builds the binary in the `build` stage
#   buildah bud --target runtime --build-arg BINARY_STAGE=host-binary \
#     --build-arg RUNTIME_IMAGE=localhost/bookworm-base .   # a binary built on the host (Scripts/container-smoke.sh)
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# `build` (compile here) or `host-binary` (take .build-container/receiptd, built on the host).
ARG BINARY_STAGE=build

FROM ${SWIFT_IMAGE} AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libsqlite3-dev libpq-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
RUN swift build -c release --static-swift-stdlib --product receiptd \
    && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/receiptd" /receiptd

FROM scratch AS host-binary
COPY .build-container/receiptd /receiptd

FROM ${BINARY_STAGE} AS binary

FROM ${RUNTIME_IMAGE} AS runtime
# Installs the runtime libraries unless the base already has them (a debootstrapped base does).
# hadolint ignore=DL3008
RUN if ! dpkg -s libcurl4 libsqlite3-0 libpq5 zlib1g ca-certificates curl >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends libcurl4 libsqlite3-0 libpq5 zlib1g libstdc++6 ca-certificates curl \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && useradd --uid 10001 --no-log-init --home-dir /var/lib/receiptd --create-home --shell /usr/sbin/nologin receiptd
COPY --from=binary /receiptd /usr/local/bin/receiptd
COPY Config /etc/receiptd/config
COPY Migrations /usr/share/receiptd/migrations
COPY openapi.yaml /usr/share/receiptd/openapi.yaml
ENV RECEIPTD_ENVIRONMENT=production \
    RECEIPTD_CONFIG_DIR=/etc/receiptd/config \
    RECEIPTD_DATABASE_PATH=/var/lib/receiptd/receiptd.sqlite \
    RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY=/usr/share/receiptd/migrations \
    RECEIPTD_API_OPENAPI_FILE=/usr/share/receiptd/openapi.yaml \
    RECEIPTD_HTTP_HOST=0.0.0.0 \
    RECEIPTD_HTTP_PORT=8080
# The numeric id, so the host and any runtime resolve it without the image's /etc/passwd.
USER 10001
VOLUME ["/var/lib/receiptd"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/receiptd"]
CMD ["serve"]
