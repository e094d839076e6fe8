"""Turn an uploaded file's bytes into the text Goldset stores for good.

Every character offset in the app (chunks, candidates, spans) points into the
text returned here, so it is computed once per document version and never
re-extracted. Each format is reduced to plain text with paragraphs separated by
blank lines, so paragraph-aware chunking works the same for every source.

Nothing is dropped silently: a file that cannot be read raises
``ExtractionError`` with a message meant for the person who uploaded it, and
what was read but looks poor (scanned pages, unreadable pages, table debris) is
flagged in the ``ExtractionReport``. Left out on purpose: HTML scripts, styles
and hidden elements, and Word headers, footers and comments, which are page
furniture rather than content.
"""

from __future__ import annotations

import codecs
import io
import re
import unicodedata
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

import charset_normalizer
import docx
from docx.oxml import parse_xml
from markdown_it import MarkdownIt
from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError
from selectolax.lexbor import LexborHTMLParser, LexborNode

SUPPORTED_SUFFIXES: tuple[str, ...] = (".txt", ".md", ".html", ".htm", ".pdf", ".docx")

MAX_TITLE_CHARS = 255

# A .docx is a zip; these bound what unpacking it may cost (zip bombs).
MAX_DOCX_UNPACKED_BYTES = 100 * 2**20
MAX_DOCX_COMPRESSION_RATIO = 100
DOCX_RATIO_CHECK_MIN_BYTES = 2**20

# Share of control or undecodable characters above which a file is not text.
_MAX_CONTROL_SHARE = 0.05
# charset-normalizer ranks single-byte code pages almost at random on short
# texts ("Café" comes out as cp1006). Legacy Western text is overwhelmingly
# cp1252, so it wins whenever its decoding is about as clean as the best guess.
_CP1252_CHAOS_TOLERANCE = 0.1


class ExtractionError(Exception):
    """A file that cannot be turned into text; the message is shown to users."""


@dataclass(frozen=True)
class QualityThresholds:
    """Limits beyond which an extraction is flagged for a human to check."""

    min_chars: int = 20
    min_letter_share: float = 0.5
    max_empty_page_share: float = 0.5
    max_image_only_page_share: float = 0.5
    max_table_noise: float = 0.5


DEFAULT_THRESHOLDS = QualityThresholds()


@dataclass(frozen=True)
class ExtractionReport:
    chars: int
    letter_share: float
    pages: int | None
    empty_pages: int
    image_only_pages: int
    table_noise: float
    encoding: str | None
    flags: tuple[str, ...]
    unreadable_pages: int = 0
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.flags

    def as_dict(self) -> dict:
        report = asdict(self)
        report["flags"] = list(self.flags)
        report["notes"] = list(self.notes)
        return report


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str
    report: ExtractionReport


# --- normalisation and quality -------------------------------------------------

_LINE_BREAKS = {0x0B: "\n", 0x0C: "\n", 0x85: "\n", 0x2028: "\n", 0x2029: "\n\n"}
_CONTROL_CHARS = {
    code: None for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if code not in (0x09, 0x0A)
}
# Vertical tab, form feed, NEL and the Unicode line/paragraph separators end a
# line: mapping them to newlines keeps words and paragraphs apart.
_NORMALISE_TABLE = str.maketrans({**_CONTROL_CHARS, **_LINE_BREAKS})
_SPACE = re.compile(r"\s+")
_NON_LETTER = re.compile(r"[\W\d_]+")


def normalise_text(text: str) -> str:
    """The canonical form of stored text: NFC, ``\\n`` line ends, no control
    characters except tab and newline, no trailing whitespace at the end."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_NORMALISE_TABLE)
    return unicodedata.normalize("NFC", text).rstrip()


def assess_quality(
    text: str,
    *,
    pages: int | None = None,
    empty_pages: int = 0,
    image_only_pages: int = 0,
    unreadable_pages: int = 0,
    encoding: str | None = None,
    notes: Sequence[str] = (),
    thresholds: QualityThresholds = DEFAULT_THRESHOLDS,
) -> ExtractionReport:
    non_space = len(_SPACE.sub("", text))
    letters = len(_NON_LETTER.sub("", text))
    letter_share = letters / non_space if non_space else 0.0
    table_noise = _table_noise(text)
    flags = []
    if len(text) < thresholds.min_chars:
        flags.append("too_short")
    if non_space and letter_share < thresholds.min_letter_share:
        flags.append("low_letter_share")
    if table_noise > thresholds.max_table_noise:
        flags.append("table_noise")
    if pages:
        if empty_pages / pages > thresholds.max_empty_page_share:
            flags.append("empty_pages")
        if image_only_pages / pages > thresholds.max_image_only_page_share:
            flags.append("scanned_pdf")
    if unreadable_pages:
        flags.append("unreadable_pages")
    return ExtractionReport(
        chars=len(text),
        letter_share=round(letter_share, 4),
        pages=pages,
        empty_pages=empty_pages,
        image_only_pages=image_only_pages,
        table_noise=round(table_noise, 4),
        encoding=encoding,
        flags=tuple(flags),
        unreadable_pages=unreadable_pages,
        notes=tuple(notes),
    )


def _table_noise(text: str) -> float:
    """Share of the text (by non-space characters) on lines that read as noise.

    Tables flattened by PDF extraction, OCR debris and number dumps all
    produce lines that are mostly digits and punctuation, or mostly one-char
    tokens ("12 | 4 | 7", "l ' , j i"). Such passages retrieve badly and are
    hard to grade, so a labeller should know. Weighting by characters rather
    than counting lines keeps page numbers and short list markers in ordinary
    prose from tipping the measure.
    """
    noisy = total = 0
    for line in text.split("\n"):
        tokens = line.split()
        if not tokens:
            continue
        size = sum(map(len, tokens))
        total += size
        letters = len(_NON_LETTER.sub("", line))
        one_char_tokens = sum(1 for token in tokens if len(token) == 1)
        if 2 * letters < size or 2 * one_char_tokens > len(tokens):
            noisy += size
    return noisy / total if total else 0.0


# --- entry point ----------------------------------------------------------------


@dataclass
class _Raw:
    """What a format reader found, before normalisation."""

    text: str
    title: str = ""
    encoding: str | None = None
    pages: int | None = None
    empty_pages: int = 0
    image_only_pages: int = 0
    unreadable_pages: int = 0
    notes: list[str] = field(default_factory=list)


_FORMAT_NAMES = {
    ".txt": "text file",
    ".md": "Markdown file",
    ".html": "HTML file",
    ".htm": "HTML file",
    ".pdf": "PDF",
    ".docx": "Word document",
}


def extract_document(
    *,
    filename: str,
    data: bytes,
    thresholds: QualityThresholds = DEFAULT_THRESHOLDS,
    max_bytes: int = 25 * 2**20,
) -> Extracted:
    name = _base_name(filename)
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        kind = f"'{suffix}' files are" if suffix else "files without an extension are"
        raise ExtractionError(
            f"{name}: {kind} not supported; upload one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if len(data) > max_bytes:
        raise ExtractionError(
            f"{name} is {_file_size(len(data))}, over the {_file_size(max_bytes)} limit"
        )
    if not data:
        raise ExtractionError(f"{name} is empty")

    try:
        raw = _READERS[suffix](name, data)
    except ExtractionError:
        raise
    except Exception as exc:
        # A damaged upload must never crash an import: whatever a parser
        # throws becomes a message about this one file.
        raise ExtractionError(
            f"{name}: the {_FORMAT_NAMES[suffix]} is damaged and could not be read "
            f"({_describe(exc)})"
        ) from exc

    text = normalise_text(raw.text)
    if not text.strip():
        if raw.image_only_pages:
            raise ExtractionError(
                f"{name} has no text layer: {raw.image_only_pages} of {raw.pages} pages are "
                "scanned images. Run OCR on it and upload the result."
            )
        raise ExtractionError(f"{name} is empty (no text could be found in it)")
    report = assess_quality(
        text,
        pages=raw.pages,
        empty_pages=raw.empty_pages,
        image_only_pages=raw.image_only_pages,
        unreadable_pages=raw.unreadable_pages,
        encoding=raw.encoding,
        notes=raw.notes,
        thresholds=thresholds,
    )
    title = " ".join(normalise_text(raw.title).split())[:MAX_TITLE_CHARS]
    return Extracted(text=text, title=title or _stem(name), report=report)


def _base_name(filename: str) -> str:
    # Some browsers send the client's full path, with either separator.
    return filename.replace("\\", "/").rsplit("/", 1)[-1].strip() or "file"


def _stem(name: str) -> str:
    return PurePosixPath(name).stem or name


def _file_size(size: int) -> str:
    for unit, scale in (("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def _describe(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if len(message) <= 200 else message[:199] + "…"


# --- plain text and Markdown ----------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE, whose BOM it starts with
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _read_text(name: str, data: bytes) -> _Raw:
    text, encoding = _decode(name, data)
    return _Raw(text=text, title=_first_line_title(text), encoding=encoding)


# A plain-text file's first line is its title when it reads like one: short, and followed by
# the body. A file that is one long paragraph keeps its file name.
MAX_FIRST_LINE_TITLE = 120


def _first_line_title(text: str) -> str:
    head, _, rest = text.lstrip().partition("\n")
    head = " ".join(head.split())
    if not head or len(head) > MAX_FIRST_LINE_TITLE or not rest.strip():
        return ""
    return head


def _read_markdown(name: str, data: bytes) -> _Raw:
    text, encoding = _decode(name, data)
    return _Raw(text=text, title=_markdown_title(text), encoding=encoding)


def _markdown_title(text: str) -> str:
    # The title is near the top; parsing all of a huge file would waste time.
    head = text[: 64 * 1024]
    tokens = MarkdownIt("commonmark").parse(head)
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open":
            return "".join(
                child.content
                for child in inline.children or ()
                if child.type in ("text", "code_inline")
            )
    return ""


def _decode(name: str, data: bytes, *, declared: str | None = None) -> tuple[str, str]:
    """Decode bytes that should be text, or say why they are not."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _strict_decode(name, data[len(bom) :], codec), codec
    if declared:
        try:
            return _checked_text(name, data.decode(declared)), declared
        except UnicodeDecodeError:
            pass  # A wrong declaration is common; fall back to detection.
    if b"\x00" in data:
        # Text never holds NUL bytes, except UTF-16 saved without a BOM.
        codec = _bomless_utf16(data)
        if codec is None or _reads_better_as_utf8(data, codec):
            raise ExtractionError(f"{name} does not look like text (it contains binary data)")
        return _strict_decode(name, data, codec), codec
    try:
        return _checked_text(name, data.decode("utf-8")), "utf-8"
    except UnicodeDecodeError:
        pass
    matches = list(charset_normalizer.from_bytes(data))
    if not matches:
        raise ExtractionError(
            f"{name} does not look like text (its character encoding could not be recognised)"
        )
    best = matches[0]
    cp1252 = next((m for m in matches if "cp1252" in m.could_be_from_charset), None)
    if cp1252 is not None and cp1252.chaos <= best.chaos + _CP1252_CHAOS_TOLERANCE:
        try:
            return _checked_text(name, data.decode("cp1252")), "cp1252"
        except UnicodeDecodeError:
            pass
    return _checked_text(name, str(best)), best.encoding


def _strict_decode(name: str, data: bytes, codec: str) -> str:
    try:
        return _checked_text(name, data.decode(codec))
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            f"{name} does not look like text (it is not valid {codec}: "
            f"{exc.reason} at byte {exc.start})"
        )


def _bomless_utf16(data: bytes) -> str | None:
    """UTF-16 without BOM shows as NUL bytes in every other position."""
    half = len(data) // 2
    if len(data) % 2 or not half:
        return None
    even_nuls, odd_nuls = data[0::2].count(0), data[1::2].count(0)
    if odd_nuls > 0.3 * half and even_nuls < 0.05 * half:
        return "utf-16-le"
    if even_nuls > 0.3 * half and odd_nuls < 0.05 * half:
        return "utf-16-be"
    return None


def _reads_better_as_utf8(data: bytes, codec: str) -> bool:
    """Bytes that are valid UTF-8 and whose UTF-16 reading leaves Latin-1 are UTF-8 with NULs.

    Without a BOM, the NUL pattern is the only sign of UTF-16, and only text mostly in
    Latin-1 shows it (every other byte zero); such text never reads as characters above
    U+00FF. Valid UTF-8 that does is short or binary, and the NULs make it no text at all.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return any(ord(c) > 0xFF for c in data.decode(codec, errors="replace"))


_SUSPICIOUS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")


def _checked_text(name: str, text: str) -> str:
    if text and len(_SUSPICIOUS.findall(text)) > _MAX_CONTROL_SHARE * len(text):
        raise ExtractionError(
            f"{name} does not look like text (too many control or unreadable characters)"
        )
    return text


# --- HTML -----------------------------------------------------------------------

_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
# Browsers read these labels as windows-1252 (WHATWG Encoding Standard).
_CP1252_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "us-ascii", "ascii"}
_HTML_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas"}
    | {"head", "title", "meta", "link", "base", "select", "datalist"}
)
_HTML_PARAGRAPHS = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "hgroup", "blockquote", "pre", "address"}
    | {"table", "ul", "ol", "dl", "menu", "figure", "form", "fieldset", "details", "hr", "center"}
)
_HTML_LINES = frozenset(
    {"li", "tr", "dt", "dd", "caption", "figcaption", "summary", "legend", "option", "br"}
)
_HTML_CELLS = frozenset({"td", "th"})
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
_CELL_SEPARATOR = " | "


def _read_html(name: str, data: bytes) -> _Raw:
    text, encoding = _decode(name, data, declared=_declared_charset(data))
    tree = LexborHTMLParser(text)
    title = ""
    for selector in ("title", "h1"):
        node = tree.css_first(selector)
        if node is not None and node.text(deep=True).strip():
            title = node.text(deep=True)
            break
    body = tree.body
    return _Raw(
        text=_HtmlText().render(body) if body is not None else "",
        title=title,
        encoding=encoding,
    )


def _declared_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    if match is None:
        return None
    label = match.group(1).decode("ascii", "ignore").lower()
    if label in _CP1252_LABELS:
        return "cp1252"
    if label.startswith("utf-16"):
        return None  # Without a BOM browsers ignore this declaration too.
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


class _HtmlText:
    """Renders the visible text of an HTML body, block by block.

    Block elements end lines (list items, rows) or paragraphs (everything
    else), so the result chunks by paragraph; table cells are joined with
    " | " on one line. Whitespace collapses as a browser would, except in
    <pre>.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending_newlines = 0
        self.at_line_start = True
        self.cell_counts: list[int] = []
        self.cell_starts: list[int] = []
        self.pre_depth = 0

    def render(self, body: LexborNode) -> str:
        # An explicit stack instead of recursion: hostile pages nest deeply.
        stack: list[tuple[LexborNode, bool]] = [(body, False)]
        while stack:
            node, closing = stack.pop()
            if closing:
                self._close(node.tag)
                continue
            tag = node.tag
            if tag == "-text":
                self._write(node.text(deep=False), raw=self.pre_depth > 0)
                continue
            if tag.startswith("-") or tag in _HTML_SKIPPED or "hidden" in node.attributes:
                continue
            self._open(tag)
            stack.append((node, True))
            children = list(node.iter(include_text=True))
            stack.extend((child, False) for child in reversed(children))
        text = "\n".join(line.rstrip() for line in "".join(self.parts).split("\n"))
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")

    def _open(self, tag: str) -> None:
        if tag == "br":
            self._break(self.pending_newlines + 1)
        elif tag in _HTML_CELLS:
            if self.cell_counts:
                if self.cell_counts[-1]:
                    self._write(_CELL_SEPARATOR, raw=True)
                self.cell_counts[-1] += 1
            self.cell_starts.append(len(self.parts))
        elif tag == "tr":
            self._break(1)
            self.cell_counts.append(0)
        elif tag in _HTML_PARAGRAPHS:
            self._break(2)
        elif tag in _HTML_LINES:
            self._break(1)
        if tag == "pre":
            self.pre_depth += 1

    def _close(self, tag: str) -> None:
        if tag in _HTML_CELLS:
            self._trim_cell(self.cell_starts.pop())
        elif tag == "tr":
            self.cell_counts.pop()
            self._break(1)
        elif tag in _HTML_PARAGRAPHS:
            self._break(2)
        elif tag in _HTML_LINES and tag != "br":
            self._break(1)
        if tag == "pre":
            self.pre_depth -= 1

    def _break(self, newlines: int) -> None:
        if self.cell_starts:
            # Inside a cell a block break is just a space: a row stays one line.
            self._write(" ", raw=False)
        else:
            self.pending_newlines = max(self.pending_newlines, min(newlines, 2))

    def _write(self, text: str, *, raw: bool) -> None:
        if not raw:
            text = _HTML_SPACE.sub(" ", text)
        if not text:
            return
        if self.pending_newlines:
            if self.parts:
                self.parts.append("\n" * self.pending_newlines)
                self.at_line_start = True
            self.pending_newlines = 0
        if not raw and text.startswith(" ") and (self.at_line_start or self._ends_with_space()):
            text = text[1:]
        if text:
            self.parts.append(text)
            self.at_line_start = text.endswith("\n")

    def _trim_cell(self, start: int) -> None:
        """Drop trailing spaces of a cell's own text (not of the separator)."""
        while len(self.parts) > start and self.parts[-1].endswith(" "):
            self.parts[-1] = self.parts[-1].rstrip(" ")
            if not self.parts[-1]:
                self.parts.pop()

    def _ends_with_space(self) -> bool:
        return bool(self.parts) and self.parts[-1].endswith(" ")


# --- PDF ------------------------------------------------------------------------


def _read_pdf(name: str, data: bytes) -> _Raw:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise ExtractionError(
                f"{name}: the PDF is password-protected; remove the password and upload it again"
            )
        pages = list(reader.pages)
    except DependencyError as exc:
        raise ExtractionError(
            f"{name}: the PDF is encrypted in a way this server cannot open ({_describe(exc)}); "
            "save it without encryption and upload it again"
        ) from exc

    texts: list[str] = []
    raw = _Raw(text="", pages=len(pages))
    unreadable: list[int] = []
    for number, page in enumerate(pages, start=1):
        try:
            page_text = (page.extract_text() or "").strip()
        except Exception as exc:
            # One broken page should not cost the rest of the document; it is
            # flagged and named in the report instead.
            unreadable.append(number)
            raw.notes.append(f"page {number} could not be read ({_describe(exc)})")
            continue
        if page_text:
            texts.append(page_text)
            continue
        raw.empty_pages += 1
        if _has_images(page):
            raw.image_only_pages += 1
    raw.text = "\n\n".join(texts)
    raw.unreadable_pages = len(unreadable)
    raw.title = _pdf_title(reader)
    if not raw.text and unreadable:
        raise ExtractionError(
            f"{name}: the PDF is damaged and could not be read (no page could be read; "
            f"{raw.notes[0]})"
        )
    return raw


def _has_images(page: PageObject) -> bool:
    """Whether the page draws an image XObject, directly or inside a form."""
    try:
        return _resources_have_images(page.get("/Resources"), depth=0)
    except Exception:
        return False  # Only a hint for the report; the page is counted empty anyway.


def _resources_have_images(resources, *, depth: int) -> bool:
    if resources is None or depth > 8:
        return False
    xobjects = resources.get_object().get("/XObject")
    if xobjects is None:
        return False
    for reference in xobjects.get_object().values():
        xobject = reference.get_object()
        subtype = xobject.get("/Subtype")
        if subtype == "/Image":
            return True
        if subtype == "/Form" and _resources_have_images(
            xobject.get("/Resources"), depth=depth + 1
        ):
            return True
    return False


def _pdf_title(reader: PdfReader) -> str:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:
        return ""  # Broken metadata should not cost the document its text.
    return str(title) if title else ""


# --- Word (.docx) ---------------------------------------------------------------

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Subtrees holding no visible body text: properties (whose w:tab elements are
# tab stops, not tabs), deleted or moved-away text, and the mc:Fallback copy of
# content already present in mc:Choice.
_DOCX_SKIPPED = frozenset(
    {_W + "pPr", _W + "rPr", _W + "del", _W + "moveFrom", _W + "instrText", _MC_FALLBACK}
)
_DOCX_NOTE_PARTS = (("footnotes", "footnote"), ("endnotes", "endnote"))
_DTD_MARKERS = (b"<!doctype", b"<!entity")


def _read_docx(name: str, data: bytes) -> _Raw:
    _check_docx_archive(name, data)
    document = docx.Document(io.BytesIO(data))
    blocks = _docx_blocks(document.element.body)
    for part_name, element_name in _DOCX_NOTE_PARTS:
        blocks.extend(_docx_note_blocks(document, part_name, element_name))
    return _Raw(text="\n\n".join(blocks), title=_docx_title(document))


def _check_docx_archive(name: str, data: bytes) -> None:
    """Refuse archives that could harm the server before python-docx opens them."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        raise ExtractionError(
            f"{name} is not a valid .docx file (it may be password-protected "
            "or saved in the old .doc format)"
        )
    with archive:
        members = archive.infolist()
        for member in members:
            path = member.filename.replace("\\", "/")
            if path.startswith("/") or re.match(r"[A-Za-z]:", path) or ".." in path.split("/"):
                raise ExtractionError(
                    f"{name}: the .docx contains an unsafe file path ({member.filename!r})"
                )
        unpacked = sum(member.file_size for member in members)
        if unpacked > MAX_DOCX_UNPACKED_BYTES:
            raise ExtractionError(
                f"{name}: the .docx would unpack to {_file_size(unpacked)}, over the "
                f"{_file_size(MAX_DOCX_UNPACKED_BYTES)} limit (possible zip bomb)"
            )
        for member in members:
            ratio = member.file_size / max(member.compress_size, 1)
            if member.file_size > DOCX_RATIO_CHECK_MIN_BYTES and ratio > MAX_DOCX_COMPRESSION_RATIO:
                raise ExtractionError(
                    f"{name}: the .docx member {member.filename!r} is compressed {ratio:.0f}:1, "
                    f"beyond {MAX_DOCX_COMPRESSION_RATIO}:1 (possible zip bomb)"
                )
        for member in members:
            if member.filename.endswith((".xml", ".rels")) and _declares_dtd(
                _read_member(name, archive, member)
            ):
                # DTDs enable entity expansion (billion laughs) and external
                # entities (XXE); Word never writes them.
                raise ExtractionError(
                    f"{name}: the .docx contains a document type declaration in "
                    f"{member.filename!r}, which Word never writes; it was refused as unsafe"
                )


def _read_member(name: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    with archive.open(member) as stream:
        content = stream.read(member.file_size + 1)
    if len(content) > member.file_size:
        raise ExtractionError(
            f"{name}: the .docx member {member.filename!r} unpacks to more than the archive "
            "declares (possible zip bomb)"
        )
    return content


def _declares_dtd(xml: bytes) -> bool:
    if xml.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        xml = xml.decode("utf-16", "replace").encode("utf-8")
    lowered = xml.lower()
    return any(marker in lowered for marker in _DTD_MARKERS)


def _docx_blocks(container) -> list[str]:
    """Paragraphs and tables of a body-like element, in document order."""
    blocks: list[str] = []
    for child in container:
        tag = child.tag
        if tag == _W + "p":
            text, text_boxes = _docx_paragraph(child)
            if text.strip():
                blocks.append(text.strip())
            for text_box in text_boxes:
                blocks.extend(_docx_blocks(text_box))
        elif tag == _W + "tbl":
            rows = _docx_table_rows(child)
            if rows:
                blocks.append("\n".join(rows))
        elif tag == _W + "sdt":
            content = child.find(_W + "sdtContent")
            if content is not None:
                blocks.extend(_docx_blocks(content))
        elif tag in (_W + "customXml", _W + "ins", _W + "moveTo"):
            blocks.extend(_docx_blocks(child))
    return blocks


def _docx_paragraph(paragraph) -> tuple[str, list]:
    """The text of a w:p, and the text boxes anchored in it (read separately)."""
    parts: list[str] = []
    text_boxes = []
    stack = list(reversed(paragraph))
    while stack:
        element = stack.pop()
        tag = element.tag
        if tag == _W + "t":
            parts.append(element.text or "")
        elif tag == _W + "tab":
            parts.append("\t")
        elif tag in (_W + "br", _W + "cr"):
            parts.append("\n")
        elif tag == _W + "noBreakHyphen":
            parts.append("-")
        elif tag == _W + "txbxContent":
            text_boxes.append(element)
        elif isinstance(tag, str) and tag not in _DOCX_SKIPPED:
            stack.extend(reversed(element))
    return "".join(parts), text_boxes


def _docx_table_rows(table) -> list[str]:
    rows = []
    for row in table.iter(_W + "tr"):
        if _enclosing_table(row) is not table:
            continue  # A row of a nested table is read with its cell.
        cells = [
            " ".join(" ".join(_docx_blocks(cell)).split())
            for cell in row.iter(_W + "tc")
            if _enclosing_row(cell) is row
        ]
        if any(cells):
            rows.append(_CELL_SEPARATOR.join(cells).rstrip())
    return rows


def _enclosing_table(element):
    parent = element.getparent()
    while parent is not None and parent.tag != _W + "tbl":
        parent = parent.getparent()
    return parent


def _enclosing_row(element):
    parent = element.getparent()
    while parent is not None and parent.tag != _W + "tr":
        parent = parent.getparent()
    return parent


def _docx_note_blocks(document, part_name: str, element_name: str) -> list[str]:
    """Footnotes or endnotes, appended after the body so none is lost."""
    blocks: list[str] = []
    for relationship in document.part.rels.values():
        if relationship.is_external or not relationship.reltype.endswith("/" + part_name):
            continue
        notes = parse_xml(relationship.target_part.blob)
        for note in notes.iter(_W + element_name):
            # Separator "notes" only draw the line above the notes.
            if note.get(_W + "type") in (None, "normal"):
                blocks.extend(_docx_blocks(note))
    return blocks


def _docx_title(document) -> str:
    title = (document.core_properties.title or "").strip()
    if title:
        return title
    for paragraph in document.paragraphs:
        style = _style_name(paragraph)
        if (style == "Title" or style.startswith("Heading")) and paragraph.text.strip():
            return paragraph.text
    return ""


def _style_name(paragraph) -> str:
    try:
        return paragraph.style.name or ""
    except Exception:
        return ""  # A dangling style reference only costs the title hint.


_READERS: dict[str, Callable[[str, bytes], _Raw]] = {
    ".txt": _read_text,
    ".md": _read_markdown,
    ".html": _read_html,
    ".htm": _read_html,
    ".pdf": _read_pdf,
    ".docx": _read_docx,
}
