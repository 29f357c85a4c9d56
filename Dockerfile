# Allot's one image: web (gunicorn with uvicorn workers), worker and beat (celery) run it with
# different commands.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
RUN groupadd --system allot && useradd --system --gid allot --home-dir /app allot

COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# collectstatic only reads settings: a throwaway key and database satisfy DEBUG=0's checks.
RUN SECRET_KEY=collectstatic-only DEBUG=0 DATABASE_URL=sqlite:////tmp/build.sqlite3 \
        python manage.py collectstatic --noinput \
    && rm -f /tmp/build.sqlite3 \
    && mkdir -p /app/var /tmp/beat \
    && chown -R allot:allot /app/var /tmp/beat

# Unprivileged, so no researcher's notebook runs in here: compose ships ALLOT_SIM_JUPYTER=0, and a
# portal that is not root refuses local sessions (docs/security.md).
USER allot
EXPOSE 8000
CMD ["gunicorn", "portal.asgi:application", "--bind", "0.0.0.0:8000", "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", "4"]
