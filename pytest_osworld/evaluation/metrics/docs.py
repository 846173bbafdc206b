"""Writer metrics (docx, odt): text, tables, spacing, tab stops, fonts, images, OCR."""

from __future__ import annotations

import functools
import logging
import os
import re
import struct
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable, Mapping, Sequence
from io import BytesIO
from typing import Any

from pytest_osworld.errors import EvaluatorUnavailable

from ._common import fuzz_ratio
from ._registry import metric, require

logger = logging.getLogger(__name__)

_DOCX = (("docx", "python-docx"),)
_DOCX_FUZZ = (("docx", "python-docx"), ("rapidfuzz", "rapidfuzz"))
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _open_docx(path: str) -> Any | None:
    from docx import Document

    try:
        return Document(path)
    except Exception as exc:  # a file that is not a docx scores 0, as upstream
        logger.debug("cannot open docx %s: %s", path, exc)
        return None


def _with_docx(fn: Callable[..., float]) -> Callable[..., float]:
    """The metric gets the opened result document in place of its path; no path, or a file that
    does not open as a docx, scores 0."""

    @functools.wraps(fn)
    def run(result: str | None, *args: Any, **kwargs: Any) -> float:
        if not result:
            return 0.0
        doc = _open_docx(result)
        if doc is None:
            return 0.0
        return fn(doc, *args, **kwargs)

    return run


def _with_docx_pair(fn: Callable[..., float]) -> Callable[..., float]:
    """The metric gets both opened documents in place of their paths; a missing path, or a file
    that does not open as a docx, scores 0."""

    @functools.wraps(fn)
    def run(result: str | None, expected: str | None = None, **options: Any) -> float:
        if not result or not expected:
            return 0.0
        d1, d2 = _open_docx(result), _open_docx(expected)
        if d1 is None or d2 is None:
            return 0.0
        return fn(d1, d2, **options)

    return run


def _zero_unless(check: Callable[[str, str], Any]) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Score 0 unless both paths are given and ``check(result, expected)`` holds, before the metric
    (and whatever it opens) runs."""

    def decorate(fn: Callable[..., float]) -> Callable[..., float]:
        @functools.wraps(fn)
        def run(result: str | None, expected: str | None = None, **options: Any) -> float:
            if not result or not expected or not check(result, expected):
                return 0.0
            return fn(result, expected, **options)

        return run

    return decorate


def _both_docx(result: str, expected: str) -> bool:
    return result.endswith(".docx") and expected.endswith(".docx")


def _odt_paragraph_texts(path: str) -> list[str]:
    """Text of each <text:p>: its own text nodes and those directly inside its <text:span>s."""
    from odf.opendocument import load
    from odf.text import P

    texts: list[str] = []
    for para in load(path).getElementsByType(P):
        parts: list[str] = []
        for node in para.childNodes:
            if node.nodeType == node.TEXT_NODE:
                parts.append(node.data)
            elif node.nodeType == node.ELEMENT_NODE and node.tagName == "text:span":
                parts.extend(child.data for child in node.childNodes if child.nodeType == child.TEXT_NODE)
        texts.append("".join(parts))
    return texts


def _squash(paragraphs: Sequence[str]) -> str:
    return re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()


@metric("compare_docx_files", requires=_DOCX_FUZZ)
def compare_docx_files(result: str | None, expected: str | None = None, **options: Any) -> float:
    """Compare the paragraph texts of two .docx (or two .odt) files.

    Options: ``ignore_blanks`` (default True: whole texts with whitespace runs squashed),
    ``ignore_case``, ``ignore_order`` (sort paragraphs), ``delete_empty_lines``,
    ``content_only`` (fractional fuzzy score of the squashed texts), ``fuzzy_match``
    (fractional: of the squashed texts, or the mean per-paragraph ratio without
    ignore_blanks).
    """
    if not result or not expected:
        return 0.0
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    fuzzy = options.get("fuzzy_match", False)
    if result.endswith(".docx") and expected.endswith(".docx"):
        d1, d2 = _open_docx(result), _open_docx(expected)
        if d1 is None or d2 is None:
            return 0.0
        p1, p2 = [p.text for p in d1.paragraphs], [p.text for p in d2.paragraphs]
    elif result.endswith(".odt") and expected.endswith(".odt"):
        require(("odf", "odfpy"))  # only .odt documents need odfpy
        try:
            p1, p2 = _odt_paragraph_texts(result), _odt_paragraph_texts(expected)
        except Exception:
            return 0.0
    else:
        return 0.0
    if options.get("ignore_order", False):
        p1, p2 = sorted(p1), sorted(p2)
    if options.get("delete_empty_lines", False):
        p1, p2 = [p for p in p1 if p.strip()], [p for p in p2 if p.strip()]

    if options.get("content_only", False):
        t1, t2 = _squash(p1), _squash(p2)
        if ignore_case:
            t1, t2 = t1.lower(), t2.lower()
        return fuzz_ratio(t1, t2) / 100.0
    if ignore_blanks:
        t1, t2 = _squash(p1), _squash(p2)
        if ignore_case:
            t1, t2 = t1.lower(), t2.lower()
        if fuzzy:
            return fuzz_ratio(t1, t2) / 100.0
        return float(t1 == t2)
    if len(p1) != len(p2):
        return 0.0
    if ignore_case:
        p1, p2 = [p.lower() for p in p1], [p.lower() for p in p2]
    if fuzzy:
        if not p1:
            return 1.0
        return sum(fuzz_ratio(a, b) / 100.0 for a, b in zip(p1, p2)) / len(p1)
    return float(p1 == p2)


@metric("compare_docx_tables", requires=_DOCX)
@_with_docx_pair
def compare_docx_tables(d1: Any, d2: Any, **_: Any) -> float:
    """Same number of tables, of the same shape, with equal stripped cell texts."""
    if len(d1.tables) != len(d2.tables):
        return 0.0
    for t1, t2 in zip(d1.tables, d2.tables):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
        for i in range(len(t1.rows)):
            for j in range(len(t1.columns)):
                if t1.cell(i, j).text.strip() != t2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


@metric("compare_line_spacing", requires=_DOCX_FUZZ)
@_zero_unless(compare_docx_files)
@_with_docx_pair
def compare_line_spacing(d1: Any, d2: Any, **_: Any) -> float:
    """Same text (compare_docx_files defaults) and the same line spacing paragraph by paragraph."""
    if len(d1.paragraphs) != len(d2.paragraphs):
        return 0.0
    return float(
        all(
            a.paragraph_format.line_spacing == b.paragraph_format.line_spacing
            for a, b in zip(d1.paragraphs, d2.paragraphs)
        )
    )


@metric("check_tabstops", requires=_DOCX)
@_with_docx_pair
def check_tabstops(d1: Any, d2: Any, **options: Any) -> float:
    """Tab stops of the non-blank paragraphs match in count and alignment; the score is
    1 minus the mean position difference relative to the text width (fractional).

    Options: ``word_number_split_by_tabstop`` (each result paragraph's ``index``-th
    tab-separated part must hold exactly that many words), ``index`` (default 0).
    """
    from docx.enum.text import WD_TAB_ALIGNMENT

    para1 = [p for p in d1.paragraphs if p.text.strip()]
    para2 = [p for p in d2.paragraphs if p.text.strip()]
    if len(para1) != len(para2):
        return 0.0
    number = options.get("word_number_split_by_tabstop")
    if number is not None:
        index = options.get("index", 0)
        for p in para1:
            words = [w for w in re.split(r"\s", p.text.split("\t")[index]) if w.strip()]
            if len(words) != number:
                return 0.0
    if not para1:
        return 0.0
    section = d2.sections[0]
    width = section.page_width - section.left_margin - section.right_margin

    def counted(tab: Any) -> bool:
        # CLEAR stops and the implicit left stop at 0 are not real tab stops.
        return not (
            tab.alignment == WD_TAB_ALIGNMENT.CLEAR or (tab.alignment == WD_TAB_ALIGNMENT.LEFT and tab.position == 0)
        )

    minus = 0.0
    for a, b in zip(para1, para2):
        tabs1 = [t for t in a.paragraph_format.tab_stops if counted(t)]
        tabs2 = [t for t in b.paragraph_format.tab_stops if counted(t)]
        if len(tabs1) != len(tabs2):
            return 0.0
        diff = 0.0
        for t1, t2 in zip(tabs1, tabs2):
            if t1.alignment != t2.alignment:
                return 0.0
            diff += abs(t1.position - t2.position)
        minus += diff / width
    return 1 - minus / len(para1)


# --- OCR ------------------------------------------------------------------------------------


def _is_xwd(path: str) -> bool:
    """X11 window dumps (``xwd``) start with a header size and file version 7, big-endian."""
    with open(path, "rb") as f:
        head = f.read(8)
    return len(head) == 8 and struct.unpack(">I", head[4:8])[0] == 7


def _xwd_to_png(path: str, target: str) -> None:
    import numpy as np
    from PIL import Image

    with open(path, "rb") as f:
        header = f.read(100)
        header_size, _version, _fmt, depth, width, height = struct.unpack(">6I", header[:24])
        f.seek(header_size)
        if depth == 32:
            pixels = np.frombuffer(f.read(width * height * 4), dtype=np.uint8).reshape(height, width, 4)
            rgb = pixels[:, :, [2, 1, 0]]  # stored as BGRA
        elif depth == 24:
            rgb = np.frombuffer(f.read(width * height * 3), dtype=np.uint8).reshape(height, width, 3)
        else:
            raise ValueError(f"unsupported xwd depth {depth}")
    Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(target, "PNG")


@metric("compare_image_text", requires=(("easyocr", "easyocr"),))
def compare_image_text(result: str | None, rule: Mapping[str, Any] | None = None, **_: Any) -> float:
    """OCR (easyocr, English) finds ``rule["text"]`` in the image's text (``type: "text"``).

    X11 window dumps (``xwd``) are converted to PNG first.
    """
    if not result or rule is None or not os.path.exists(result):
        return 0.0
    import easyocr

    try:
        reader = easyocr.Reader(["en"])
    except Exception as exc:  # its models are downloaded at first use: not an agent failure
        raise EvaluatorUnavailable(f"easyocr cannot load its models here: {exc}") from exc
    with tempfile.TemporaryDirectory() as tmp:
        path = result
        try:
            if _is_xwd(result):
                path = os.path.join(tmp, "screen.png")
                _xwd_to_png(result, path)
            text = " ".join(entry[1] for entry in reader.readtext(path))
        except Exception as exc:
            logger.debug("OCR failed on %s: %s", result, exc)
            return 0.0
    if rule["type"] != "text":
        raise ValueError(f"compare_image_text: unsupported rule type {rule['type']!r}")
    return float(rule["text"] in text)


# --- other Writer checks --------------------------------------------------------------------


@metric("find_default_font")
def find_default_font(result: str | None, rules: Mapping[str, Any] | None = None, **_: Any) -> float:
    """Writer's configured default font (registrymodifications.xcu) equals ``rules["font_name"]``."""
    if not result or rules is None:
        return 0.0
    ns = {"oor": "http://openoffice.org/2001/registry"}
    font = None
    try:
        root = ET.parse(result).getroot()
        for item in root.findall('.//item[@oor:path="/org.openoffice.Office.Writer/DefaultFont"]', ns):
            for prop in item.findall('.//prop[@oor:name="Standard"]', ns):
                for value in prop.findall("value", ns):
                    font = value.text
    except Exception as exc:
        logger.debug("find_default_font: %s", exc)
    return float(font == rules["font_name"])


@metric("contains_page_break", requires=_DOCX)
@_with_docx
def contains_page_break(doc: Any, rules: Mapping[str, Any] | None = None, **_: Any) -> float:
    """The document has a page break (exactly ``rules["page_break_count"]`` if given)."""
    wanted = rules.get("page_break_count") if isinstance(rules, Mapping) else None
    count = sum(
        1
        for p in doc.paragraphs
        for run in p.runs
        for br in run.element.findall(f".//{{{_W}}}br")
        if br.get(f"{{{_W}}}type") == "page"
    )
    if wanted is not None and count != wanted:
        return 0.0
    return float(count > 0)


@metric("compare_init_lines", requires=_DOCX)
@_with_docx_pair
def compare_init_lines(d1: Any, d2: Any, **_: Any) -> float:
    """The paragraphs both documents have (the shorter length) are equal."""
    return float(all(a.text == b.text for a, b in zip(d1.paragraphs, d2.paragraphs)))


@metric("compare_docx_images", requires=_DOCX)
@_with_docx_pair
def compare_docx_images(d1: Any, d2: Any, **_: Any) -> float:
    """The documents embed the same number of images with identical pixels, in order."""
    from PIL import Image

    def images(doc: Any) -> list[bytes]:
        return [rel.target_part.blob for rel in doc.part.rels.values() if "image" in rel.reltype]

    i1, i2 = images(d1), images(d2)
    if len(i1) != len(i2):
        return 0.0
    return float(all(Image.open(BytesIO(a)).tobytes() == Image.open(BytesIO(b)).tobytes() for a, b in zip(i1, i2)))


@metric("compare_insert_equation", requires=_DOCX_FUZZ)
@_zero_unless(compare_docx_files)
@_with_docx_pair
def compare_insert_equation(d1: Any, d2: Any, **_: Any) -> float:
    """Same text, and some paired runs of both documents hold an embedded object (equation)."""
    for p1, p2 in zip(d1.paragraphs, d2.paragraphs):
        for r1, r2 in zip(p1.runs, p2.runs):
            if r1.element.xpath(".//w:object") and r2.element.xpath(".//w:object"):
                return 1.0
    return 0.0


@metric("compare_font_names", requires=_DOCX)
@_with_docx
def compare_font_names(doc: Any, rules: Mapping[str, Any] | None = None, **_: Any) -> float:
    """Every run's font name equals ``rules["font_name"]``."""
    if rules is None:
        return 0.0
    return float(all(run.font.name == rules["font_name"] for p in doc.paragraphs for run in p.runs))


@metric("compare_subscript_contains", requires=_DOCX)
@_with_docx_pair
def compare_subscript_contains(d1: Any, d2: Any, **_: Any) -> float:
    """Some paired runs are subscript in both documents."""
    return float(
        any(
            r1.font.subscript and r2.font.subscript
            for p1, p2 in zip(d1.paragraphs, d2.paragraphs)
            for r1, r2 in zip(p1.runs, p2.runs)
        )
    )


@metric("has_page_numbers_in_footers", requires=_DOCX)
@_with_docx
def has_page_numbers_in_footers(doc: Any, *_: Any, **__: Any) -> float:
    """Each section's footer's first paragraph holds a digit."""
    for section in doc.sections:
        footer = section.footer
        text = footer.paragraphs[0].text if footer.paragraphs else ""
        if not any(ch.isdigit() for ch in text):
            return 0.0
    return 1.0


@metric("is_first_line_centered", requires=_DOCX)
@_with_docx
def is_first_line_centered(doc: Any, *_: Any, **__: Any) -> float:
    """The first paragraph is centred."""
    from docx.enum.text import WD_PARAGRAPH_ALIGNMENT

    return float(doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


@metric("check_file_exists")
def check_file_exists(directory: str | None, filename: str | None = None, **_: Any) -> float:
    """``directory/filename`` is an existing file."""
    if not directory or not filename:
        return 0.0
    return float(os.path.isfile(os.path.join(directory, filename)))


@metric("compare_contains_image", requires=_DOCX)
@_with_docx_pair
def compare_contains_image(d1: Any, d2: Any, **_: Any) -> float:
    """Paired runs either both hold a drawing or both do not."""
    for p1, p2 in zip(d1.paragraphs, d2.paragraphs):
        for r1, r2 in zip(p1.runs, p2.runs):
            if ("graphicData" in r1._element.xml) != ("graphicData" in r2._element.xml):
                return 0.0
    return 1.0


@metric("evaluate_colored_words_in_tables", requires=(*_DOCX_FUZZ, ("skimage", "scikit-image")))
@_zero_unless(compare_docx_files)
@_with_docx
def evaluate_colored_words_in_tables(doc: Any, *_: Any, **options: Any) -> float:
    """Same text, and in tables words starting with a vowel are red, others blue (CIEDE2000
    distance at most ``threshold``, default 3.5)."""
    from docx.shared import RGBColor
    from skimage.color import deltaE_ciede2000, rgb2lab

    threshold = options.get("threshold", 3.5)

    def distance(c1: Any, c2: Any) -> float:
        lab1 = rgb2lab([c1[0] / 255.0, c1[1] / 255.0, c1[2] / 255.0])
        lab2 = rgb2lab([c2[0] / 255.0, c2[1] / 255.0, c2[2] / 255.0])
        return float(deltaE_ciede2000(lab1, lab2))  # type: ignore[no-untyped-call]  # scikit-image ships py.typed but leaves it unannotated

    red, blue = RGBColor(255, 0, 0), RGBColor(0, 0, 255)
    for table in doc.tables:
        for row in table.rows:
            for cell in row.cells:
                for p in cell.paragraphs:
                    for run in p.runs:
                        if run.text:
                            target = red if run.text[0].lower() in "aeiou" else blue
                            if distance(run.font.color.rgb, target) > threshold:
                                return 0.0
    return 1.0


@metric("check_highlighted_words", requires=(*_DOCX_FUZZ, ("odf", "odfpy")))
@_zero_unless(compare_docx_files)
def check_highlighted_words(result: str, *_: Any, **__: Any) -> float:
    """Same text, and no span of the (odt) result is highlighted yellow (#ffff00)."""
    from odf.opendocument import load
    from odf.text import Span

    doc = load(result)
    for span in doc.getElementsByType(Span):
        style_name = span.getAttribute("stylename")
        if not style_name:
            continue
        for style in doc.automaticstyles.childNodes:
            if style.getAttribute("name") == style_name:
                if any(prop.getAttribute("backgroundcolor") == "#ffff00" for prop in style.childNodes):
                    return 0.0
    return 1.0


@metric("evaluate_strike_through_last_paragraph", requires=_DOCX_FUZZ)
@_zero_unless(compare_docx_files)
@_with_docx
def evaluate_strike_through_last_paragraph(doc: Any, *_: Any, **__: Any) -> float:
    """Same text, and every run of the last paragraph is struck through."""
    return float(all(run.font.strike for run in doc.paragraphs[-1].runs))


@metric("evaluate_conversion", requires=_DOCX)
@_with_docx
def evaluate_conversion(doc: Any, *_: Any, **__: Any) -> float:
    """No run (in tables or body) is all upper case."""
    table_runs = (
        run for t in doc.tables for row in t.rows for cell in row.cells for p in cell.paragraphs for run in p.runs
    )
    body_runs = (run for p in doc.paragraphs for run in p.runs)
    return float(not any(run.text.isupper() for run in (*table_runs, *body_runs)))


@metric("evaluate_spacing", requires=_DOCX)
@_with_docx
def evaluate_spacing(doc: Any, *_: Any, **__: Any) -> float:
    """Line spacing of the first three paragraphs is 1.0, 2.0 and 1.5."""
    spacing = [doc.paragraphs[i].paragraph_format.line_spacing for i in range(3)]
    return float(spacing == [1.0, 2.0, 1.5])


@metric("check_italic_font_size_14", requires=_DOCX_FUZZ)
@_zero_unless(compare_docx_files)
@_with_docx
def check_italic_font_size_14(doc: Any, *_: Any, **__: Any) -> float:
    """Same text, and every italic run is 14 pt."""
    for p in doc.paragraphs:
        for run in p.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


@metric("evaluate_alignment", requires=_DOCX)
@_with_docx
def evaluate_alignment(doc: Any, *_: Any, **__: Any) -> float:
    """In every sentence of 3+ words, the first three words come before the rest."""
    for p in doc.paragraphs:
        for sentence in p.text.split("."):
            words = sentence.strip().split()
            if len(words) < 3:
                continue
            first, rest = " ".join(words[:3]), " ".join(words[3:])
            if not (first in sentence and rest in sentence and sentence.find(first) < sentence.find(rest)):
                return 0.0
    return 1.0


def _train_ids(path: str) -> tuple[set[str], int]:
    doc = _open_docx(path)
    if doc is None:
        return set(), 0
    ids: set[str] = set()
    for p in doc.paragraphs:
        parts = p.text.split(",")
        if len(parts) == 4:
            ids.add(parts[1].strip())
    return ids, len(ids)


@metric("check_no_duplicates", requires=_DOCX)
def check_no_duplicates(result: str | None, expected: str | None = None, **_: Any) -> float:
    """The result's 4-field lines have unique train ids (field 2) equal to the expected's set.

    Upstream names these (initial, processed) and is called (result, expected).
    """
    if not result or not expected:
        return 0.0
    initial_ids, initial_count = _train_ids(result)
    doc = _open_docx(expected)
    if doc is None:
        return 0.0
    seen: set[str] = set()
    for p in doc.paragraphs:
        parts = p.text.split(",")
        if len(parts) == 4:
            train = parts[1].strip()
            if train in seen:
                return 0.0
            seen.add(train)
    return float(seen == initial_ids and len(seen) == initial_count)


@metric("compare_docx_lines", requires=_DOCX)
@_with_docx_pair
def compare_docx_lines(d1: Any, d2: Any, **_: Any) -> float:
    """The sets of non-blank stripped paragraphs are equal."""

    def lines(doc: Any) -> set[str]:
        return {p.text.strip() for p in doc.paragraphs if p.text.strip()}

    return float(lines(d1) == lines(d2))


@metric("compare_docx_files_and_ignore_new_lines", requires=_DOCX)
@_zero_unless(_both_docx)
@_with_docx_pair
def compare_docx_files_and_ignore_new_lines(d1: Any, d2: Any, **options: Any) -> float:
    """Like compare_docx_files after dropping empty paragraphs (``ignore_blanks``, default True)."""
    p1 = [p.text for p in d1.paragraphs if p.text != ""]
    p2 = [p.text for p in d2.paragraphs if p.text != ""]
    if options.get("ignore_blanks", True):
        return float(_squash(p1) == _squash(p2))
    return float(p1 == p2)


def _highlighted_texts(path: str) -> list[str | None]:
    with zipfile.ZipFile(path) as z, z.open("word/document.xml") as f:
        root = ET.parse(f).getroot()
    ns = {"w": _W}
    texts: list[str | None] = []
    for run in root.findall(".//w:r", ns):
        mark = run.find(".//w:highlight", ns)
        if mark is not None and mark.get(f"{{{_W}}}val") != "none":
            t = run.find(".//w:t", ns)
            if t is not None:
                texts.append(t.text)
    return texts


@metric("compare_highlighted_text")
def compare_highlighted_text(result: str | None, expected: str | None = None, **_: Any) -> float:
    """The sets of highlighted run texts are equal."""
    if not result or not expected:
        return 0.0
    return float(set(_highlighted_texts(result)) == set(_highlighted_texts(expected)))


@metric("compare_references", requires=_DOCX_FUZZ)
@_zero_unless(_both_docx)
@_with_docx_pair
def compare_references(d1: Any, d2: Any, **options: Any) -> float:
    """Fuzzy similarity of the reference lists after the ``reference_indicator`` paragraph,
    rescaled above ``reference_base_result`` (default 0.5) to [0, 1] (fractional)."""
    indicator = options.get("reference_indicator", "References")
    base: float = options.get("reference_base_result", 0.5)
    p1, p2 = [p.text for p in d1.paragraphs], [p.text for p in d2.paragraphs]
    i1 = p1.index(indicator) if indicator in p1 else -1
    i2 = p2.index(indicator) if indicator in p2 else -1
    if i1 == -1 and i2 == -1:
        return 1.0
    if i1 == -1 or i2 == -1:
        return 0.0
    refs1 = [p for p in p1[i1 + 1 :] if p.strip()]
    refs2 = [p for p in p2[i2 + 1 :] if p.strip()]
    if len(refs1) != len(refs2):
        return 0.0
    if not refs1:
        return 0.0  # upstream divides by zero here
    similarity = sum(fuzz_ratio(a, b) / 100.0 for a, b in zip(refs1, refs2)) / len(refs1)
    if similarity >= base + 0.01:
        return (similarity - base) / (1 - base)
    return 0.0


@metric("compare_unique_train_records", requires=_DOCX)
def compare_unique_train_records(result: str | None, expected: Any = None, **_: Any) -> float:
    """``expected`` is [gold docx, initial docx]: the result's lines all come from the initial
    file, its train ids are unique and equal the gold's, with as many lines as the gold."""
    if not result or not isinstance(expected, list) or len(expected) < 2:
        return 0.0
    gold, initial = expected[0], expected[1]
    if not gold or not initial:
        return 0.0

    def lines_and_ids(path: str) -> tuple[list[str], list[str]] | None:
        doc = _open_docx(path)
        if doc is None:
            return None
        lines = [p.text.strip() for p in doc.paragraphs if p.text.strip()]
        return lines, [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]

    got, want, start = lines_and_ids(result), lines_and_ids(gold), lines_and_ids(initial)
    if got is None or want is None or start is None:
        return 0.0
    lines, ids = got
    if not set(lines) <= set(start[0]) or len(ids) != len(set(ids)) or set(ids) != set(want[1]):
        return 0.0
    return float(len(lines) == len(want[0]))
