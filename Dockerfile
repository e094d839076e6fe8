FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
COPY pyproject.toml constraints.txt ./
COPY goldset goldset
COPY corpus corpus
COPY labelling labelling
COPY evaluation evaluation
RUN pip install --no-cache-dir torch==2.13.0 \
 && pip install --no-cache-dir -c constraints.txt .
COPY . .
RUN useradd --create-home goldset
USER goldset
