# syntax=docker/dockerfile:1
#
# activity-core production images, one per process:
#
#   docker build --target api    -t activity-core-api .
#   docker build --target worker -t activity-core-worker .
#
# Stages: `build` installs everything (dev dependencies included) and runs
# `npm run build` (dist/: the API, the worker, the migration runner, the
# prebuilt workflow bundle); `production-deps` installs without dev
# dependencies; `api` and `worker` are Node plus those node_modules plus their
# part of dist/, run as the unprivileged `node` user (uid 1000). docs/operating.md
# ("Production build and images") lists the settings; adr/0025 explains.
#
# Installs are `npm install` from the lockfile rather than `npm ci`: the
# lockfile lacks some platforms' optional binaries (see scripts/bootstrap.mjs),
# which `npm ci` refuses. Versions still come from the lockfile.

ARG NODE_VERSION=24.22.3

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN --mount=type=cache,target=/root/.npm \
    npm install --no-audit --no-fund \
    && npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS production-deps
WORKDIR /app
COPY . .
# The @activity-core/* links point at sources the images do not carry: the build compiled them in.
RUN --mount=type=cache,target=/root/.npm \
    npm install --omit=dev --no-audit --no-fund \
    && rm -rf node_modules/@activity-core

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Owned by root, read-only to the process.
COPY --from=production-deps /app/package.json ./package.json
COPY --from=production-deps /app/node_modules ./node_modules
COPY scripts/healthcheck.mjs ./scripts/healthcheck.mjs
COPY --from=build /app/dist/migrations ./dist/migrations
# The base image's unprivileged `node` user, by number so that Kubernetes' runAsNonRoot can check it.
USER 1000:1000

FROM runtime AS worker
COPY --from=build /app/dist/worker ./dist/worker
# The SDK's Prometheus exporter; also what the health check probes. Unset it to turn both off.
# Loopback: the exporter has no authentication. A scraper outside the container needs
# an explicit all-interfaces address, e.g. 0.0.0.0:9464 (on a network only the scraper can reach).
ENV WORKER_METRICS_BIND_ADDRESS=127.0.0.1:9464
# The worker's memory bounds (apps/worker/src/runtime-flags.ts; docs/operating.md, "Worker memory").
ENV MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS="--max-old-space-size=384 --max-semi-space-size=4"
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "scripts/healthcheck.mjs", "worker"]
# On SIGTERM the worker lets running activities finish (up to about 30 s): give it a stop timeout above that.
CMD ["node", "--enable-source-maps", "dist/worker/main.js"]

FROM runtime AS api
COPY --from=build /app/dist/api ./dist/api
COPY --from=build /app/dist/db ./dist/db
# Listens on every interface only when API_KEYS is set; without keys the API stays on loopback.
ENV HOST=0.0.0.0 \
    PORT=3000
# The API's memory bounds (apps/api/src/runtime-flags.ts; docs/operating.md, "Worker memory and slots").
ENV MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS="--max-semi-space-size=4"
EXPOSE 3000
# Liveness: /healthz. /readyz (Postgres and Temporal reachable) is for load balancers.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "scripts/healthcheck.mjs", "api"]
# `docker run … node dist/db/migrate.js` applies the migrations alone (with MIGRATE_ON_START=false on the processes).
CMD ["node", "--enable-source-maps", "dist/api/main.js"]
