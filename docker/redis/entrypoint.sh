#!/bin/sh
# framed-redis: redis-server with docker/redis/redis.conf on REDIS_PORT
# (default 6379, which the health check follows); arguments come after, so
# `--bind 127.0.0.1` and the like override the file.
exec redis-server /etc/redis/framed.conf --port "${REDIS_PORT:-6379}" "$@"
