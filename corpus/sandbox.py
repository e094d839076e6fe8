"""Extraction of risky formats in a child process with a time and a memory limit.

A PDF can loop or balloon inside its parser; in the worker that would hang or kill the whole
process and the job would be retried forever. In a child process with RLIMIT_AS and a wall-clock
timeout, the file fails with its reason and the worker lives on. Plain text stays in-process:
its decoders have no such failure mode, and a child process per file would cost more than the
decoding.

Run as `python -m corpus.sandbox` it reads a JSON header line and the file's bytes on stdin and
writes the result as one JSON object on stdout. Django-free.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from corpus.extraction import Extracted, ExtractionError, ExtractionReport, extract_document

ISOLATED_SUFFIXES = (".pdf", ".docx")


@dataclass(frozen=True)
class SandboxLimits:
    seconds: float = 60.0
    memory_bytes: int = 1536 * 2**20


def extract_isolated(
    *, filename: str, data: bytes, limits: SandboxLimits = SandboxLimits()
) -> Extracted:
    """`extract_document`, in a child process for PDF and DOCX files."""
    if Path(filename).suffix.lower() not in ISOLATED_SUFFIXES:
        return extract_document(filename=filename, data=data)
    header = json.dumps({"filename": filename}).encode() + b"\n"

    def limit_memory() -> None:  # runs in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    try:
        child = subprocess.run(  # noqa: S603 - our own module, no shell
            _child_command(),
            input=header + data,
            capture_output=True,
            timeout=limits.seconds,
            preexec_fn=limit_memory,
            cwd=Path(__file__).resolve().parents[1],
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ExtractionError(
            f"{Path(filename).name}: reading it took longer than {limits.seconds:g} s, so it was "
            "stopped; the file may be malformed (a looping or oversized PDF)."
        ) from None
    try:
        result = json.loads(child.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        result = None
    if child.returncode != 0 or result is None:
        if b"MemoryError" in child.stderr or child.returncode < 0:
            raise ExtractionError(
                f"{Path(filename).name}: reading it needed more than "
                f"{limits.memory_bytes // 2**20} MB of memory, so it was stopped."
            )
        raise ExtractionError(f"{Path(filename).name}: the file could not be read.")
    if "error" in result:
        raise ExtractionError(result["error"])
    report = result["report"]
    report["flags"], report["notes"] = tuple(report["flags"]), tuple(report["notes"])
    return Extracted(text=result["text"], title=result["title"], report=ExtractionReport(**report))


def _child_command() -> list[str]:
    return [sys.executable, "-m", "corpus.sandbox"]


def _main() -> None:
    stream = sys.stdin.buffer
    header = json.loads(stream.readline())
    data = stream.read()
    try:
        extracted = extract_document(filename=header["filename"], data=data)
    except ExtractionError as exc:
        out = {"error": str(exc)}
    else:
        out = {
            "text": extracted.text,
            "title": extracted.title,
            "report": extracted.report.as_dict(),
        }
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    _main()
