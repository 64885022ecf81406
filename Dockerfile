# runwatch: the HTTP service, built from TypeScript and run as `node dist/main.js`.
# Build: docker build -t runwatch .   Run with docker-compose.yml (Postgres + ClickHouse), or alone with the
# embedded stores under /data (no DATABASE_URL / CLICKHOUSE_URL).

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# argon2, chdb and koffi ship prebuilt binaries for linux-x64/arm64 (glibc); no compiler is needed.
# The committed lock file lacks entries for some other-platform optional binaries, which `npm ci` rejects;
# `npm install` then installs the same locked versions.
# Scripts wait for the sources: `prepare` is `npm run build` (the service, the PGlite template, the dashboard), run below.
RUN npm ci --no-audit --no-fund --ignore-scripts || npm install --no-audit --no-fund --ignore-scripts
# The dev dependency `node` (Node 24 for machines whose own is older) installs its binary in a script, skipped here:
# its dangling bin link goes, and the image's Node 24 runs the build.
RUN rm -f node_modules/.bin/node
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund --ignore-scripts

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data \
    LOG_PRETTY=false
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Migrations are read at start-up from ../../schema relative to dist/db, i.e. /app/schema.
COPY schema ./schema
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (graceful shutdown in src/main.ts).
# --liftoff-only: the embedded Postgres's WebAssembly without V8's optimizing tier (docs/foundation.md, "The process").
CMD ["node", "--liftoff-only", "dist/main.js"]
