# syntax=docker/dockerfile:1
#
# syncmirror daemon image. Build:  docker build -t syncmirror .
# Run:    docker run -d --init -e SYNCMIRROR_API_TOKEN -e SYNCMIRROR_HTTP_TOKEN -v syncmirror-data:/data \
#           -v "$PWD/config/syncmirror.yaml:/config/syncmirror.yaml:ro" -p 9464:9464 syncmirror
#
# The config must keep `database.path` under /data and `http.listen` on port 9464 (the
# HEALTHCHECK below probes 127.0.0.1:9464), e.g. `listen: 0.0.0.0:9464`. On that listener
# /status (it names users) needs `Authorization: Bearer $SYNCMIRROR_HTTP_TOKEN`; without the
# variable it answers 401. /metrics, /healthz and /readyz stay open (no personal data). The
# console at / (docs/console.md; its files are dist/console/) asks for that token in the page.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: native module (better-sqlite3 via node-gyp), type-check, bundle (scripts/build.mjs) --
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies first, so source edits do not invalidate this layer. package.json's
# `allowScripts` approves better-sqlite3's install script (npm 11 blocks unapproved ones).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
# dist/cli.js starts with a node shebang; make it executable for the `syncmirror` symlink. The
# bundle leaves better-sqlite3, pg and pino in node_modules: the runtime stage copies them.
RUN npm run build \
 && chmod 0755 dist/cli.js \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies and compiled output only ------------------------------
FROM ${NODE_IMAGE} AS runtime
# A 96 MB old generation and 4 MB semi-spaces keep the daemon's peak RSS under 200 MB at 1M exported
# rows (bench/RESULTS.md): V8's defaults let dead export pages pile up in a 48 MB young generation
# and an old generation several times the live heap before collecting them. Costs a quarter to half
# more CPU. Raise the old generation (or lower export.pages_ahead_per_pass) for very large documents.
# MALLOC_ARENA_MAX=2: glibc keeps two malloc arenas instead of one per thread, 7-12 MB less peak RSS
# for no measurable CPU (bench/mirror.ts).
ENV NODE_ENV=production \
    SYNCMIRROR_CONFIG=/config/syncmirror.yaml \
    NODE_OPTIONS="--max-old-space-size=96 --max-semi-space-size=4" \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/migrations ./migrations
# `syncmirror` on PATH without npm link; node resolves modules from the symlink's target.
# /data holds the database (customer documents): owned by the non-root user, closed to others.
RUN ln -s /app/dist/cli.js /usr/local/bin/syncmirror \
 && mkdir -p /data /config \
 && chown node:node /data \
 && chmod 0700 /data
USER node
VOLUME /data
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:9464/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# SIGTERM (docker stop) drains: the current page commits, the database closes, exit 0 within 10 s.
STOPSIGNAL SIGTERM
CMD ["syncmirror", "run", "--config", "/config/syncmirror.yaml"]
