# The Burnbox app image: one image, every Procfile process (choose it with the command).
FROM python:3.11-slim

# tini is PID 1: it forwards SIGTERM to the process and reaps the orphans it leaves (gunicorn's
# and Dramatiq's children). A Python program as PID 1 gets no default signal handling from the
# kernel and leaves zombies behind.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY requirements.lock ./
RUN pip install -r requirements.lock
COPY . .
# Editable, like `make install`: the commands run from /app, where `burnbox web` finds
# gunicorn.conf.py (a plain install would look for it next to the installed package).
RUN pip install --no-deps --editable . \
    && useradd --system --create-home --uid 10001 burnbox \
    && mkdir -p /data && chown burnbox /data

USER burnbox
# production: start-up refuses a placeholder or short auth.jwt_secret. Without one, the embedded
# default generates its secret into /data; the scaled processes refuse to start.
ENV BURNBOX_ENV=production \
    BURNBOX_DATA_DIR=/data \
    BURNBOX_HTTP__HOST=0.0.0.0 \
    BURNBOX_SMTP__HOST=0.0.0.0
EXPOSE 8080 2525
VOLUME ["/data"]

# For `burnbox serve` and `burnbox web`; containers of the other processes (worker, clock,
# mailin, release) serve no HTTP: run them with --no-healthcheck (compose.yaml disables it).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-m", "burnbox.healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--"]
# Default: the all-in-one embedded mode. For the scaled mode run `burnbox web`, `burnbox worker`,
# `burnbox clock`, `burnbox mailin`, and `burnbox release` once per deploy.
CMD ["burnbox", "serve"]
