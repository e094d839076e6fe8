import codecs
import contextlib
import io
import json
import random
import re
import zipfile

import docx
import pytest
from docx.oxml import parse_xml
from hypothesis import given, settings
from hypothesis import strategies as st
from pypdf import PageObject, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, NumberObject

from corpus.extraction import (
    SUPPORTED_SUFFIXES,
    ExtractionError,
    ExtractionReport,
    QualityThresholds,
    assess_quality,
    extract_document,
    normalise_text,
)

PROSE = (
    "Employees accrue two days of paid leave for every month worked. Leave that is "
    "not taken by the end of March lapses, unless the manager agreed to carry it over."
)


def extract(filename: str, data: bytes, **kwargs):
    return extract_document(filename=filename, data=data, **kwargs)


def error_of(filename: str, data: bytes, **kwargs) -> str:
    with pytest.raises(ExtractionError) as caught:
        extract(filename, data, **kwargs)
    return str(caught.value)


# --- file builders ------------------------------------------------------------


def make_pdf(
    pages: list[list[str] | str | None],
    *,
    title: str | None = None,
    user_password: str | None = None,
    owner_password: str | None = None,
) -> bytes:
    """A PDF with one entry per page: lines of text, "image" for a scanned
    page (an image XObject and no text), or None for a blank page."""
    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    for content in pages:
        page = writer.add_blank_page(612, 792)
        if content is None:
            continue
        if content == "image":
            image = DecodedStreamObject()
            image.set_data(b"\x80" * 4)
            image.update(
                {
                    NameObject("/Type"): NameObject("/XObject"),
                    NameObject("/Subtype"): NameObject("/Image"),
                    NameObject("/Width"): NumberObject(2),
                    NameObject("/Height"): NumberObject(2),
                    NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                    NameObject("/BitsPerComponent"): NumberObject(8),
                }
            )
            resources = {
                NameObject("/XObject"): DictionaryObject(
                    {NameObject("/Im1"): writer._add_object(image)}
                )
            }
            operators = b"q 500 0 0 700 50 50 cm /Im1 Do Q"
        else:
            lines = [content] if isinstance(content, str) else content
            resources = {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
            shown = b" T* ".join(b"(" + line.encode("latin-1") + b") Tj" for line in lines)
            operators = b"BT /F1 12 Tf 14 TL 72 720 Td " + shown + b" ET"
        page[NameObject("/Resources")] = DictionaryObject(resources)
        stream = DecodedStreamObject()
        stream.set_data(operators)
        page[NameObject("/Contents")] = writer._add_object(stream)
    if title is not None:
        writer.add_metadata({"/Title": title})
    if user_password is not None or owner_password is not None:
        writer.encrypt(
            user_password=user_password or "",
            owner_password=owner_password,
            algorithm="RC4-128",
        )
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def make_docx(build=None, *, title: str | None = None) -> bytes:
    document = docx.Document()
    if title is not None:
        document.core_properties.title = title
    if build is None:
        document.add_paragraph(PROSE)
    else:
        build(document)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def rewrite_zip(data: bytes, changes: dict[str, bytes]) -> bytes:
    """The same archive with some members replaced or added."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            if member.filename not in changes:
                target.writestr(member.filename, source.read(member))
        for name, content in changes.items():
            target.writestr(name, content)
    return buffer.getvalue()


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


# --- normalise_text -------------------------------------------------------------


def test_normalise_text_composes_unicode():
    assert normalise_text("Cafe\u0301") == "Café"


def test_normalise_text_unifies_line_ends():
    assert normalise_text("a\r\nb\rc\nd") == "a\nb\nc\nd"


def test_normalise_text_drops_control_characters_but_keeps_tab_and_newline():
    assert normalise_text("a\x00b\x07c\x1bd\x7fe\x9bf\tg\nh") == "abcdef\tg\nh"


def test_normalise_text_turns_other_line_separators_into_newlines():
    assert normalise_text("a\x0cb\x0bc\x85d\u2028e\u2029f") == "a\nb\nc\nd\ne\n\nf"


def test_normalise_text_strips_trailing_whitespace_at_the_very_end_only():
    assert normalise_text("  indented  \nline  \n\n \t") == "  indented  \nline"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_normalise_text_is_idempotent(text):
    once = normalise_text(text)
    assert normalise_text(once) == once


# --- quality --------------------------------------------------------------------


def test_prose_is_not_flagged():
    report = assess_quality(PROSE + "\n\n" + PROSE)
    assert report.flags == ()
    assert report.ok
    assert report.table_noise == 0.0
    assert report.letter_share > 0.9


def test_numbers_and_pipes_are_flagged_as_table_noise():
    table = "\n".join(f"{i} | {i * 3.5} | {i * 7}% | 2024" for i in range(30))
    report = assess_quality(table)
    assert report.table_noise > 0.9
    assert "table_noise" in report.flags
    assert "low_letter_share" in report.flags
    assert not report.ok


def test_ocr_debris_of_one_letter_tokens_is_table_noise():
    debris = "\n".join(["l i , j r t . a e"] * 10)
    assert "table_noise" in assess_quality(debris).flags


def test_page_numbers_in_prose_do_not_tip_table_noise():
    text = "\n\n".join(f"{PROSE}\n{page}" for page in range(1, 6))
    report = assess_quality(text)
    assert report.table_noise < 0.05
    assert report.flags == ()


def test_short_text_is_flagged():
    assert assess_quality("Leave: yes").flags == ("too_short",)


def test_letter_share_counts_letters_among_non_space_characters():
    report = assess_quality("abcd 1234", thresholds=QualityThresholds(min_chars=1))
    assert report.letter_share == 0.5
    assert report.chars == 9


def test_page_flags():
    report = assess_quality(PROSE, pages=4, empty_pages=3, image_only_pages=3)
    assert report.flags == ("empty_pages", "scanned_pdf")
    report = assess_quality(PROSE, pages=4, empty_pages=1, image_only_pages=1)
    assert report.flags == ()


def test_unreadable_pages_are_flagged():
    report = assess_quality(PROSE, pages=3, unreadable_pages=1, notes=["page 2 could not be read"])
    assert report.flags == ("unreadable_pages",)
    assert report.notes == ("page 2 could not be read",)


def test_thresholds_are_configurable():
    strict = QualityThresholds(min_chars=10_000)
    assert assess_quality(PROSE, thresholds=strict).flags == ("too_short",)


def test_report_as_dict_is_json_serialisable():
    report = assess_quality("1 2 3", pages=2, empty_pages=1, encoding="utf-8")
    as_dict = report.as_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict
    assert as_dict["flags"] == list(report.flags)
    assert set(as_dict) >= {
        "chars",
        "letter_share",
        "pages",
        "empty_pages",
        "image_only_pages",
        "table_noise",
        "encoding",
        "flags",
    }
    assert isinstance(report, ExtractionReport)


# --- whole-file rules -----------------------------------------------------------


def test_unsupported_suffix_lists_supported_ones():
    message = error_of("budget.xlsx", b"data")
    assert "budget.xlsx" in message and "'.xlsx'" in message
    for suffix in SUPPORTED_SUFFIXES:
        assert suffix in message
    assert "without an extension" in error_of("README", b"data")


def test_suffix_is_case_insensitive():
    assert extract("NOTES.TXT", PROSE.encode()).text == PROSE


def test_oversized_file_is_refused_with_its_size():
    data = b"a" * int(30.2 * 2**20)
    assert error_of("report.pdf", data) == "report.pdf is 30.2 MB, over the 25 MB limit"
    assert error_of("a.txt", b"a" * 3000, max_bytes=2048) == "a.txt is 2.9 KB, over the 2 KB limit"


@pytest.mark.parametrize("filename", ["empty.txt", "empty.md", "empty.html", "empty.pdf", "e.docx"])
def test_zero_byte_file_is_empty(filename):
    assert error_of(filename, b"") == f"{filename} is empty"


def test_file_empty_after_extraction_is_empty():
    assert "blank.txt is empty" in error_of("blank.txt", b" \r\n\t \n")
    assert "page.html is empty" in error_of("page.html", b"<script>x()</script><p>  </p>")


def test_title_falls_back_to_the_file_stem_without_client_path():
    assert extract(r"C:\Users\ann\Leave policy.txt", PROSE.encode()).title == "Leave policy"
    assert extract("docs/2024/handbook.txt", PROSE.encode()).title == "handbook"


def test_a_text_files_short_first_line_is_its_title():
    """Issue 14 item 10: labellers see "Annual leave policy", not "hr-014.txt"."""
    data = f"\n  Annual leave   policy (HR-POL-014)\r\n\n{PROSE}\n".encode()
    extracted = extract("hr-014.txt", data)
    assert extracted.title == "Annual leave policy (HR-POL-014)"
    assert "  Annual leave   policy (HR-POL-014)\n" in extracted.text  # the text is untouched
    # One long paragraph, or a first line with nothing after it, is not a title.
    assert extract("long.txt", (PROSE + "\n" + PROSE).encode()).title == "long"
    assert extract("one.txt", b"Annual leave policy\n\n  \n").title == "one"


# --- plain text -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("Café déjà vu – ok".encode(), "utf-8"),
        (codecs.BOM_UTF8 + "Café déjà vu – ok".encode(), "utf-8-sig"),
        (codecs.BOM_UTF16_LE + "Café déjà vu – ok".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "Café déjà vu – ok".encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF32_LE + "Café déjà vu – ok".encode("utf-32-le"), "utf-32-le"),
        (codecs.BOM_UTF32_BE + "Café déjà vu – ok".encode("utf-32-be"), "utf-32-be"),
    ],
)
def test_unicode_text_is_decoded_and_its_encoding_recorded(data, encoding):
    extracted = extract("note.txt", data)
    assert extracted.text == "Café déjà vu – ok"
    assert extracted.report.encoding == encoding


@pytest.mark.parametrize(
    "text",
    [
        "Café déjà vu",
        "Le garçon a mangé une crème brûlée à l'hôtel.",
        "Grüße aus München, schöne Straße",
        "naïve façade — “quoted” €5",
    ],
)
def test_legacy_western_text_comes_out_right(text):
    extracted = extract("old.txt", text.encode("cp1252"))
    assert extracted.text == text
    assert extracted.report.encoding == "cp1252"


def test_latin1_text_comes_out_right():
    assert extract("old.txt", "Café déjà vu".encode("latin-1")).text == "Café déjà vu"


def test_other_legacy_encodings_are_still_detected():
    polish = "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig."
    assert extract("pl.txt", polish.encode("cp1250")).text == polish
    russian = "Привет, как дела? Всё хорошо."
    assert extract("ru.txt", russian.encode("cp1251")).text == russian


def test_utf16_without_bom_is_recognised():
    extracted = extract("win.txt", PROSE.encode("utf-16-le"))
    assert extracted.text == PROSE
    assert extracted.report.encoding == "utf-16-le"


def test_binary_with_nul_bytes_is_not_text():
    data = random.Random(7).randbytes(4000)
    assert b"\x00" in data
    assert "photo.txt does not look like text" in error_of("photo.txt", data)


def test_binary_without_nul_bytes_is_not_text():
    data = bytes(b for b in random.Random(8).randbytes(4000) if b)
    assert "does not look like text" in error_of("blob.txt", data)


def test_text_full_of_control_characters_is_not_text():
    assert "does not look like text" in error_of("ctl.txt", bytes(range(1, 32)) * 40)


def test_invalid_data_after_a_bom_is_not_text():
    message = error_of("bad.txt", codecs.BOM_UTF8 + b"ok \xff\xfe broken")
    assert "does not look like text" in message and "utf-8" in message


def test_text_is_normalised():
    extracted = extract("crlf.txt", b"one\r\ntwo\x07\r\n\r\nCafe\xcc\x81\n\n")
    assert extracted.text == "one\ntwo\n\nCafé"


# --- Markdown -------------------------------------------------------------------


def test_markdown_title_is_the_first_heading():
    data = b"Intro line\n\n## Leave *policy*\n\n# Later heading\n\nBody text here."
    extracted = extract("handbook.md", data)
    assert extracted.title == "Leave policy"
    assert extracted.text == data.decode()  # The stored text is the file itself.


def test_markdown_title_understands_setext_and_skips_code():
    data = b"```bash\n# not a heading\n```\n\nLeave policy\n============\n\nText."
    assert extract("handbook.md", data).title == "Leave policy"


def test_markdown_without_heading_is_titled_by_stem():
    assert extract("notes.md", PROSE.encode()).title == "notes"


# --- HTML -----------------------------------------------------------------------

PAGE = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title> Leave   policy </title>
<style>p { color: red }</style><script>var secret = 1;</script></head>
<body onload="steal()">
<nav><a href="/">Home</a></nav>
<h1>Annual leave</h1>
<p>Employees get <b>25</b>
   days.<br>Ask HR first.</p>
<div><div>Nested block</div></div>
<ul><li>One</li><li>Two</li></ul>
<table><tr><th>Name</th><th>Days</th></tr><tr><td>Ann</td><td>12</td></tr></table>
<script>alert(1)</script><noscript>Enable JS</noscript><template><p>tpl</p></template>
<iframe src="x">frame</iframe><object>obj</object><svg><text>drawn</text></svg>
<img src="x" onerror="alert(2)"><p hidden>Hidden text</p>
<pre>  keep   spacing
   here</pre>
</body></html>"""


def test_html_visible_text_is_kept_in_blocks():
    extracted = extract("leave.html", PAGE)
    assert extracted.text == (
        "Home\n\n"
        "Annual leave\n\n"
        "Employees get 25 days.\nAsk HR first.\n\n"
        "Nested block\n\n"
        "One\nTwo\n\n"
        "Name | Days\nAnn | 12\n\n"
        "  keep   spacing\n   here"
    )
    assert extracted.title == "Leave policy"
    assert extracted.report.encoding == "utf-8"


def test_html_scripts_and_event_handlers_do_not_reach_the_text():
    text = extract("leave.html", PAGE).text
    for hidden in ("alert", "onerror", "steal", "secret", "color", "Enable JS", "tpl", "frame"):
        assert hidden not in text
    for hidden in ("obj", "drawn", "Hidden text"):
        assert hidden not in text


def test_html_table_cells_with_blocks_stay_on_one_row():
    data = b"<table><tr><td><p>a</p><p>b</p></td><td></td><td>c</td></tr></table>"
    assert extract("t.html", data).text == "a b |  | c"


def test_html_title_falls_back_to_h1_then_stem():
    assert extract("x.html", b"<h1>Main  title</h1><p>" + PROSE.encode() + b"</p>").title == (
        "Main title"
    )
    assert extract("x.htm", b"<p>" + PROSE.encode() + b"</p>").title == "x"


def test_html_charset_comes_from_meta_then_bom_then_utf8():
    latin = '<meta charset="iso-8859-1"><p>Café déjà vu</p>'.encode("cp1252")
    extracted = extract("a.html", latin)
    assert extracted.text == "Café déjà vu"
    assert extracted.report.encoding == "cp1252"
    http_equiv = (
        '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>“Quoted”</p>'
    ).encode("cp1252")
    assert extract("b.html", http_equiv).text == "“Quoted”"
    bom = codecs.BOM_UTF16_LE + "<p>Grüße</p>".encode("utf-16-le")
    assert extract("c.html", bom).text == "Grüße"
    assert extract("d.html", "<p>Grüße</p>".encode()).report.encoding == "utf-8"


def test_html_with_a_wrong_charset_declaration_falls_back_to_detection():
    data = '<meta charset="utf-8"><p>Café déjà vu</p>'.encode("cp1252")
    assert extract("e.html", data).text == "Café déjà vu"


def test_deeply_nested_html_does_not_crash():
    data = b"<div>" * 5000 + b"deep" + b"</div>" * 5000
    assert extract("deep.html", data).text == "deep"


# --- PDF ------------------------------------------------------------------------


def test_pdf_pages_are_joined_by_blank_lines():
    data = make_pdf([["First page line one", "line two"], "Second page"])
    extracted = extract("report.pdf", data)
    assert extracted.text == "First page line one\nline two\n\nSecond page"
    assert extracted.report.pages == 2
    assert extracted.report.empty_pages == 0
    assert extracted.report.encoding is None


def test_pdf_title_comes_from_metadata_else_stem():
    assert extract("r.pdf", make_pdf([PROSE], title="Leave policy 2024")).title == (
        "Leave policy 2024"
    )
    assert extract("r.pdf", make_pdf([PROSE], title="  ")).title == "r"
    assert extract("r.pdf", make_pdf([PROSE])).title == "r"


def test_pdf_empty_and_image_only_pages_are_counted():
    data = make_pdf([PROSE, None, "image", "image", "image"])
    report = extract("scan.pdf", data).report
    assert report.pages == 5
    assert report.empty_pages == 4
    assert report.image_only_pages == 3
    assert "scanned_pdf" in report.flags
    assert "empty_pages" in report.flags


def test_pdf_with_a_few_blank_pages_is_not_flagged_as_scanned():
    report = extract("doc.pdf", make_pdf([PROSE, None, PROSE])).report
    assert report.empty_pages == 1
    assert report.image_only_pages == 0
    assert report.flags == ()


def test_fully_scanned_pdf_asks_for_ocr():
    message = error_of("scan.pdf", make_pdf(["image", "image"]))
    assert message.startswith("scan.pdf has no text layer: 2 of 2 pages are scanned images")
    assert "OCR" in message


def test_pdf_of_blank_pages_is_empty():
    assert "blank.pdf is empty" in error_of("blank.pdf", make_pdf([None, None]))


def test_password_protected_pdf_is_refused():
    message = error_of("secret.pdf", make_pdf([PROSE], user_password="s3cret"))
    assert message.startswith("secret.pdf: the PDF is password-protected")


def test_pdf_encrypted_with_an_empty_user_password_opens():
    data = make_pdf([PROSE], owner_password="owner-only")
    assert extract("locked.pdf", data).text == PROSE


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.4\nthis is not really a pdf",
        b"not a pdf at all",
        b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>",
    ],
)
def test_corrupt_pdf_is_an_extraction_error(data):
    message = error_of("report.pdf", data)
    assert message.startswith("report.pdf: the PDF is damaged and could not be read (")


def test_damaged_pdfs_never_crash_the_import():
    good = make_pdf([PROSE, "Second page"], title="T")
    rng = random.Random(3)
    for _ in range(60):
        data = bytearray(good)
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        cut = rng.randint(len(data) // 2, len(data))
        with contextlib.suppress(ExtractionError):
            extract("fuzzed.pdf", bytes(data[:cut]))


def test_unreadable_page_is_reported_not_lost_silently(monkeypatch):
    original = PageObject.extract_text

    def extract_text(page, *args, **kwargs):
        if "Broken" in page.get_contents().get_data().decode("latin-1"):
            raise ValueError("bad font program")
        return original(page, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", extract_text)
    extracted = extract("r.pdf", make_pdf([PROSE, "Broken", "Third"]))
    assert extracted.text == PROSE + "\n\nThird"
    assert extracted.report.unreadable_pages == 1
    assert "unreadable_pages" in extracted.report.flags
    assert extracted.report.notes == ("page 2 could not be read (bad font program)",)
    message = error_of("r.pdf", make_pdf(["Broken"]))
    assert "damaged" in message and "page 1 could not be read" in message


# --- Word -----------------------------------------------------------------------


def test_docx_paragraphs_and_tables_in_document_order():
    def build(document):
        document.add_heading("Annual leave", level=1)
        document.add_paragraph("Employees get 25 days.")
        document.add_paragraph("")  # spacing paragraphs are skipped
        table = document.add_table(rows=2, cols=3)
        for row, values in zip(
            table.rows, [("Name", "Days", "Team"), ("Ann", "12", "")], strict=True
        ):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
        document.add_paragraph("After the table.")

    extracted = extract("policy.docx", make_docx(build))
    assert extracted.text == (
        "Annual leave\n\nEmployees get 25 days.\n\nName | Days | Team\nAnn | 12 |\n\n"
        "After the table."
    )
    assert extracted.title == "Annual leave"
    assert extracted.report.pages is None


def test_docx_title_prefers_core_properties_then_heading_then_stem():
    assert extract("p.docx", make_docx(title="Official title")).title == "Official title"
    assert extract("p.docx", make_docx()).title == "p"

    def titled(document):
        document.add_paragraph("Preamble")
        document.add_paragraph("Leave handbook", style="Title")

    assert extract("p.docx", make_docx(titled)).title == "Leave handbook"


def test_docx_merged_and_nested_cells_are_read_once():
    def build(document):
        table = document.add_table(rows=2, cols=3)
        table.cell(0, 0).merge(table.cell(0, 1)).text = "Merged"
        table.cell(0, 2).text = "C"
        inner = table.cell(1, 0).add_table(rows=1, cols=2)
        inner.cell(0, 0).text = "in1"
        inner.cell(0, 1).text = "in2"
        table.cell(1, 2).text = "D"

    assert extract("t.docx", make_docx(build)).text == "Merged | C\nin1 | in2 |  | D"


def test_docx_tracked_changes_text_boxes_and_tabs():
    vml = 'xmlns:v="urn:schemas-microsoft-com:vml"'
    mc = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'

    def build(document):
        paragraph = document.add_paragraph("Kept")
        paragraph._p.append(parse_xml(f"<w:r {W_NS}><w:tab/><w:t>tabbed</w:t></w:r>"))
        paragraph._p.append(
            parse_xml(f'<w:ins {W_NS}><w:r><w:t xml:space="preserve"> added</w:t></w:r></w:ins>')
        )
        paragraph._p.append(
            parse_xml(f"<w:del {W_NS}><w:r><w:delText> removed</w:delText></w:r></w:del>")
        )
        box = document.add_paragraph("Anchor")
        box._p.append(
            parse_xml(
                f"<w:r {W_NS} {mc} {vml}><mc:AlternateContent>"
                "<mc:Choice Requires='wps'><w:pict><v:shape><v:textbox><w:txbxContent>"
                "<w:p><w:r><w:t>Boxed note</w:t></w:r></w:p>"
                "</w:txbxContent></v:textbox></v:shape></w:pict></mc:Choice>"
                "<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>"
                "<w:p><w:r><w:t>Boxed note</w:t></w:r></w:p>"
                "</w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback>"
                "</mc:AlternateContent></w:r>"
            )
        )

    extracted = extract("changes.docx", make_docx(build))
    assert extracted.text == "Kept\ttabbed added\n\nAnchor\n\nBoxed note"


def test_docx_content_controls_are_read():
    def build(document):
        document.add_paragraph("Before")
        document.element.body.insert(
            1,
            parse_xml(
                f"<w:sdt {W_NS}><w:sdtPr/><w:sdtContent>"
                "<w:p><w:r><w:t>Inside a content control</w:t></w:r></w:p>"
                "</w:sdtContent></w:sdt>"
            ),
        )

    assert extract("c.docx", make_docx(build)).text == "Before\n\nInside a content control"


def test_docx_footnotes_are_appended():
    data = make_docx()
    archive = zipfile.ZipFile(io.BytesIO(data))
    rels = archive.read("word/_rels/document.xml.rels").replace(
        b"</Relationships>",
        b'<Relationship Id="rIdNotes" '
        b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" '
        b'Target="footnotes.xml"/></Relationships>',
    )
    types = archive.read("[Content_Types].xml").replace(
        b"</Types>",
        b'<Override PartName="/word/footnotes.xml" ContentType="application/'
        b'vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/></Types>',
    )
    footnotes = (
        f"<w:footnotes {W_NS}>"
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:id="1"><w:p><w:r><w:t>See clause 4.</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    ).encode()
    data = rewrite_zip(
        data,
        {
            "word/_rels/document.xml.rels": rels,
            "[Content_Types].xml": types,
            "word/footnotes.xml": footnotes,
        },
    )
    assert extract("notes.docx", data).text == PROSE + "\n\nSee clause 4."


@pytest.mark.parametrize(
    "data",
    [b"not a zip", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, b"PK\x03\x04broken"],
)
def test_non_zip_docx_is_refused(data):
    message = error_of("old.docx", data)
    assert message.startswith("old.docx is not a valid .docx file")


def test_zip_that_is_not_a_word_document_is_damaged():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "hi")
    message = error_of("fake.docx", buffer.getvalue())
    assert message.startswith("fake.docx: the Word document is damaged and could not be read (")


@pytest.mark.parametrize("evil", ["../../etc/cron.d/x", "/etc/passwd", "word/../../x.xml", "C:/x"])
def test_zip_slip_paths_are_refused(evil):
    data = rewrite_zip(make_docx(), {evil: b"x"})
    message = error_of("slip.docx", data)
    assert message == f"slip.docx: the .docx contains an unsafe file path ({evil!r})"


def test_highly_compressed_member_is_refused():
    data = rewrite_zip(make_docx(), {"word/media/bomb.bin": b"\x00" * (2 * 2**20)})
    message = error_of("bomb.docx", data)
    assert "'word/media/bomb.bin' is compressed" in message
    assert "possible zip bomb" in message


def test_archive_unpacking_beyond_100_mb_is_refused():
    # 101 members of exactly 1 MiB: none trips the ratio rule (> 1 MiB), the sum does.
    changes = {f"word/media/part{i}.bin": b"\x00" * 2**20 for i in range(101)}
    message = error_of("big.docx", rewrite_zip(make_docx(), changes))
    assert re.search(
        r"would unpack to 101\.\d MB, over the 100 MB limit \(possible zip bomb\)", message
    )


@pytest.mark.parametrize(
    "declaration",
    [
        b'<!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>',
        b'<!DOCTYPE w SYSTEM "file:///etc/passwd">',
        b'<!ENTITY xxe SYSTEM "http://example.com/">',
    ],
)
def test_document_type_declarations_are_refused(declaration):
    data = make_docx()
    document = zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml")
    declaration_end = document.index(b"?>") + 2
    poisoned = document[:declaration_end] + declaration + document[declaration_end:]
    message = error_of("xxe.docx", rewrite_zip(data, {"word/document.xml": poisoned}))
    assert message.startswith("xxe.docx: the .docx contains a document type declaration")
    assert "word/document.xml" in message


def test_utf16_encoded_dtd_is_refused_too():
    data = make_docx()
    poisoned = (
        codecs.BOM_UTF16_LE
        + '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE w []><w/>'.encode("utf-16-le")
    )
    message = error_of("xxe.docx", rewrite_zip(data, {"word/styles.xml": poisoned}))
    assert "document type declaration" in message


def test_damaged_docx_never_crashes_the_import():
    good = make_docx(title="T")
    rng = random.Random(5)
    for _ in range(40):
        data = bytearray(good)
        for _ in range(rng.randint(1, 10)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        with contextlib.suppress(ExtractionError):
            extract("fuzzed.docx", bytes(data))


def test_error_messages_are_single_human_lines():
    for filename, data in [
        ("a.pdf", b"%PDF-1.4 junk"),
        ("a.docx", b"junk"),
        ("a.txt", bytes(range(256)) * 4),
    ]:
        message = error_of(filename, data)
        assert message.startswith(filename)
        assert "\n" not in message
        assert not re.search(r"Traceback|File \"", message)


@pytest.mark.parametrize("text", ["0\x00\x80", "a\x00" * 10 + "é"])
def test_utf8_with_nul_bytes_is_not_mistaken_for_utf16(text):
    # Found by the property test below: a NUL pattern alone looked like UTF-16 without a BOM.
    assert "binary data" in error_of("any.txt", text.encode())


def test_latin_text_saved_as_utf16_without_a_bom_is_still_read():
    assert extract("any.txt", "Caf\u00e9 hours".encode("utf-16-le")).text == "Caf\u00e9 hours"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_utf8_text_file_is_stored_normalised_or_refused_clearly(text):
    try:
        extracted = extract("any.txt", text.encode())
    except ExtractionError as error:
        assert "is empty" in str(error) or "does not look like text" in str(error)
    else:
        assert extracted.text == normalise_text(text)
        assert extracted.report.chars == len(extracted.text)
