# The Burnbox app image: one image, every Procfile process (choose it with the command).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY requirements.lock ./
RUN pip install -r requirements.lock
COPY . .
RUN pip install --no-deps . \
    && useradd --system --create-home --uid 10001 burnbox \
    && mkdir -p /data && chown burnbox /data

USER burnbox
ENV BURNBOX_DATA_DIR=/data \
    BURNBOX_HTTP__HOST=0.0.0.0 \
    BURNBOX_SMTP__HOST=0.0.0.0
EXPOSE 8080 2525
VOLUME ["/data"]

# Default: the all-in-one embedded mode. For the scaled mode run `burnbox web`, `burnbox worker`,
# `burnbox clock`, `burnbox mailin`, and `burnbox release` once per deploy.
CMD ["burnbox", "serve"]
