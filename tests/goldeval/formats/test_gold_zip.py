"""The CLI reads the gold-set bundle as the page downloads it: zipped, as well as a folder."""

import zipfile

import pytest

from goldeval.formats import gold as gold_format
from goldeval.formats.gold import GoldFormatError, load_gold

GOLD = b'{"question_id": "q1", "question": "leave?", "spans": [{"doc_id": "d1", "grade": 2}]}\n'
CORPUS = b'{"doc_id": "d1", "version": 1, "title": "Leave", "text": "Staff get leave."}\n'


def write_zip(path, members):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


@pytest.mark.parametrize("prefix", ["gold-set-v1/", ""], ids=["as-downloaded", "flat"])
def test_zipped_bundle_reads_like_the_folder(tmp_path, prefix):
    members = {f"{prefix}gold.jsonl": GOLD, f"{prefix}corpus.jsonl": CORPUS}
    members[f"{prefix}manifest.json"] = b'{"gold_set": "v1"}'
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "gold.jsonl").write_bytes(GOLD)
    (folder / "corpus.jsonl").write_bytes(CORPUS)
    (folder / "manifest.json").write_bytes(b'{"gold_set": "v1"}')
    zipped = load_gold(write_zip(tmp_path / "bundle.zip", members))
    unzipped = load_gold(folder)
    assert zipped.questions == unzipped.questions
    assert zipped.corpus == unzipped.corpus
    assert zipped.manifest == {"gold_set": "v1"}


def test_zip_without_gold_file_is_named(tmp_path):
    path = write_zip(tmp_path / "bundle.zip", {"x/readme.txt": b"hi"})
    with pytest.raises(GoldFormatError, match="no gold.jsonl"):
        load_gold(path)


def test_zip_bomb_stops_at_the_bound(tmp_path, monkeypatch):
    # A member that unpacks far past its size on disk stops with a message, never read whole.
    path = write_zip(tmp_path / "bundle.zip", {"b/gold.jsonl": GOLD + b" " * 10_000_000})
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(gold_format, "MAX_ZIP_BYTES", 1_000_000)
    with pytest.raises(GoldFormatError, match="unpacks to more than"):
        gold_format.load_gold(path)


def test_two_gold_files_in_one_zip_are_refused(tmp_path):
    path = write_zip(tmp_path / "bundle.zip", {"a/gold.jsonl": GOLD, "b/gold.jsonl": GOLD})
    with pytest.raises(GoldFormatError, match="more than one gold.jsonl"):
        load_gold(path)


def test_truncated_zip_is_a_message_not_a_traceback(tmp_path):
    path = write_zip(tmp_path / "bundle.zip", {"b/gold.jsonl": GOLD * 50})
    data = path.read_bytes()
    broken = tmp_path / "broken.zip"
    # Keep the central directory (so it is still recognised as a zip) but spoil the data.
    broken.write_bytes(data[:40] + b"\x00" * 40 + data[80:])
    with pytest.raises(GoldFormatError):
        load_gold(broken)


@pytest.mark.parametrize("prefix", ["gold-set-v1/", ""], ids=["as-downloaded", "flat"])
def test_an_optional_bundle_file_reads_from_the_zip_as_from_the_folder(tmp_path, prefix):
    pool = b'{"retriever": "bm25"}\n'
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "gold.jsonl").write_bytes(GOLD)
    (folder / "pool.jsonl").write_bytes(pool)
    zipped = write_zip(
        tmp_path / "bundle.zip", {f"{prefix}gold.jsonl": GOLD, f"{prefix}pool.jsonl": pool}
    )
    assert gold_format.bundle_file(folder, "pool.jsonl") == pool
    assert gold_format.bundle_file(zipped, "pool.jsonl") == pool
    assert gold_format.bundle_file(zipped, "answers-gold.jsonl") is None
    assert gold_format.bundle_file(folder, "answers-gold.jsonl") is None
    assert gold_format.bundle_file(tmp_path / "missing.zip", "pool.jsonl") is None
