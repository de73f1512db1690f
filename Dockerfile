# wine-recon-sync: the daemon image (also runs `simulate` for docker-compose).
# Node.js 26 'Lithium': the Active LTS line (since 2026-10-28, security fixes until April 2029); CI tests it.
FROM node:26-slim
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY bench ./bench
COPY sql ./sql
# `npm ci` builds dist/ through `prepare` (TypeScript is a dev dependency); then drop dev dependencies.
RUN npm ci && npm prune --omit=dev && npm cache clean --force
USER node
ENV SYNC_HEALTH_FILE=/tmp/wine-recon-sync.health
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD ["/app/bin/wine-recon-sync", "healthcheck"]
ENTRYPOINT ["/app/bin/wine-recon-sync"]
CMD ["schedule"]
