"""Small .xlsx and .ods files for the tests and the bench, built here (nothing is downloaded).

``.xlsx`` through xlsxwriter (a test extra); ``.ods`` written by hand with
zipfile: a mimetype entry, a manifest and a content.xml with one table, the
least an OpenDocument reader needs.
"""

from __future__ import annotations

import io
import zipfile
from xml.sax.saxutils import escape


def xlsx_bytes(rows: list[list[object]]) -> bytes:
    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True, "strings_to_numbers": False})
    sheet = book.add_worksheet("export")
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    book.add_worksheet("other").write(0, 0, "a second sheet is never read")
    book.close()
    return out.getvalue()


_MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">
 <manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
</manifest:manifest>"""

_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">
<office:body><office:spreadsheet><table:table table:name="export">{rows}</table:table></office:spreadsheet></office:body>
</office:document-content>"""


def _ods_cell(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (f'<table:table-cell office:value-type="float" office:value="{value}">'
                f"<text:p>{value}</text:p></table:table-cell>")
    return f'<table:table-cell office:value-type="string"><text:p>{escape(str(value))}</text:p></table:table-cell>'


def ods_bytes(rows: list[list[object]]) -> bytes:
    body = "".join("<table:table-row>" + "".join(_ods_cell(v) for v in row) + "</table:table-row>" for row in rows)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("META-INF/manifest.xml", _MANIFEST)
        z.writestr("content.xml", _CONTENT.format(rows=body), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()
