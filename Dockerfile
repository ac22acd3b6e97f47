# syntax=docker/dockerfile:1
# Switchboard container: a builder stage compiles the single binary with Bun (deno task
# compile), and a small Debian runtime stage runs it as a non-root user with /data as a volume.
# The build script embeds lmdb's linux-x64 glibc addon, so the image is linux/amd64:
#   docker build --platform linux/amd64 -t switchboard .
# See docs/operations.md for running, backups and the apps file.

FROM --platform=linux/amd64 node:22-bookworm-slim AS build
WORKDIR /src
ENV NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# deno, bun and every library come from the npm registry.
RUN npm ci
COPY . .
ENV PATH=/src/node_modules/.bin:$PATH
RUN deno task compile && ./dist/switchboard --version

FROM --platform=linux/amd64 debian:bookworm-slim
# libstdc++ (needed by the embedded lmdb addon) and bash (used by HEALTHCHECK) are part of the
# base image; nothing else is installed.
RUN groupadd --system --gid 10001 switchboard \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin switchboard \
 && mkdir -p /data /etc/switchboard \
 && chown switchboard:switchboard /data
COPY --from=build /src/dist/switchboard /usr/local/bin/switchboard
USER switchboard:switchboard
WORKDIR /data
ENV DATA_DIR=/data PORT=4000 HOST=0.0.0.0
# APPS_FILE is read when set, e.g. -e APPS_FILE=/etc/switchboard/apps.json with the file mounted.
VOLUME /data
EXPOSE 4000
# SIGTERM: stop accepting, finish in-flight writes, close sockets and LMDB, exit 0.
STOPSIGNAL SIGTERM
# The image has no curl or wget: bash's /dev/tcp sends the request and grep checks the answer.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-4000} && printf 'GET /readyz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && grep -q '\"status\":\"ready\"' <&3"]
ENTRYPOINT ["/usr/local/bin/switchboard"]
