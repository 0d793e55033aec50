# The service's image: the official Node 24 image (slim), production dependencies only, Perl for ExifTool, the chat
# model trained at build time, a non-root user, tini as PID 1 so that SIGTERM reaches Node, and node (not npm) as the
# command. docs/deployment.md tells how to run it; docker-compose.yml runs it behind the nginx gateway.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only (no compiler, test tools or the pinned Node of the devDependencies). None of them has
# an install script; the project's own (postinstall: the training below) needs the sources, not copied yet.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY plugins ./plugins
COPY schemas ./schemas
COPY domain ./domain
COPY scripts/train.ts ./scripts/train.ts
# The chat model, trained into the model cache now, as `npm ci` does outside a container: a container is ready in
# about a second.
RUN npm run train

FROM node:24-bookworm-slim
# exiftool-vendored runs the ExifTool Perl script it bundles; tini forwards signals and reaps children.
RUN apt-get update \
  && apt-get install -y --no-install-recommends perl tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    MODEL_CACHE_DIR=/app/node_modules/.cache/chat-metadata-api
WORKDIR /app
COPY --from=build /app /app
# The official image's unprivileged user; the application's files stay root's, read-only to it.
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# `npm start`'s command, without npm in between.
CMD ["node", "src/server.ts"]
