# receiptd container: build with the Swift toolchain image, run on slim Debian with only the
# runtime libraries. Base images are build arguments so a local mirror or registry can be named.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
RUN swift build -c release --static-swift-stdlib --product receiptd \
    && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/receiptd" /receiptd

FROM ${RUNTIME_IMAGE} AS runtime
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4 libsqlite3-0 libstdc++6 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/receiptd --create-home receiptd
COPY --from=build /receiptd /usr/local/bin/receiptd
COPY Config /etc/receiptd/config
COPY Migrations /usr/share/receiptd/migrations
ENV RECEIPTD_ENVIRONMENT=production \
    RECEIPTD_CONFIG_DIR=/etc/receiptd/config \
    RECEIPTD_DATABASE_PATH=/var/lib/receiptd/receiptd.sqlite \
    RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY=/usr/share/receiptd/migrations \
    RECEIPTD_HTTP_HOST=0.0.0.0 \
    RECEIPTD_HTTP_PORT=8080
USER receiptd
VOLUME ["/var/lib/receiptd", "/etc/receiptd/config"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/receiptd"]
CMD ["serve"]
