# Two images from one file: `web` (gunicorn, beat) without the encoder, `worker` (Celery) with it.
# The web process never encodes (tests/test_web_without_encoder.py), so its image leaves out
# torch, transformers, sentence-transformers, onnxruntime, openvino and the packaged model
# (~1.2 GB).
FROM python:3.11-slim AS web
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
    GOLDSET_ARTIFACT_DIR=/data/artifacts GOLDSET_MODEL_CACHE_DIR=/data/model-cache
WORKDIR /app
COPY pyproject.toml constraints.txt ./
COPY goldset goldset
COPY corpus corpus
COPY labelling labelling
COPY evaluation evaluation
RUN pip install --no-cache-dir -c constraints.txt .
COPY . .
# Static files are part of the code: collected at build time into /app/staticfiles (root's, read
# only to the app user), so the container never writes under /app. The settings refuse to load
# without SECRET_KEY when DEBUG is off; a throwaway one serves this step only. No database.
RUN SECRET_KEY=collectstatic-build-only DEBUG=0 python manage.py collectstatic --noinput -v0
RUN useradd --create-home goldset && mkdir -p /data/artifacts /data/model-cache \
 && chown -R goldset /data
USER goldset

FROM web AS worker
USER root
# torch from PyTorch's CPU wheel index: the default index's Linux wheel is a CUDA build that
# pulls several GB of nvidia-* wheels no CPU deployment uses. Then the encoder extra, pinned.
# A site that cannot reach download.pytorch.org passes a mirror of that index (it must serve
# torch's dependencies too): --build-arg TORCH_INDEX_URL=http://mirror/whl/cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --index-url "$TORCH_INDEX_URL" torch==2.13.0 \
 && pip install --no-cache-dir -c constraints.txt ".[encoder]"
USER goldset
