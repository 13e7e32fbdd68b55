"""Session's writes and administration, the path `docket index`, `export` and `delete` take."""

from __future__ import annotations

import pytest
from store_cases import EMB, version

from docket.api import Session
from docket.errors import InputError
from docket.ingest import IndexOptions
from docket.store.factory import open_store


@pytest.fixture()
def db(tmp_path):
    path = str(tmp_path / "s.db")
    st = open_store(path)
    st.write_version(version("refunds", 1, ["refunds take ten days"]))
    st.write_version(version("refunds", 2, ["refunds take five days"]))
    st.close()
    return path


def test_delete_names_the_versions_the_store_holds(db) -> None:
    with Session.open(db, embedder=EMB) as s:
        with pytest.raises(InputError, match=r"document 'refunds', field 'version': has no version 7; stored: v1, v2"):
            s.delete("refunds", 7)
        with pytest.raises(InputError, match=r"document 'nope': is not in the store; nothing deleted"):
            s.delete("nope")
        assert s.delete("refunds", 1) == 1
        assert [dv.version for dv in s.export()] == [2]


def test_versions_copied_from_another_store_keep_their_vectors_and_add_to_one_report(db, tmp_path) -> None:
    target = str(tmp_path / "t.db")
    src = open_store(db, create=False, read_only=True)
    try:
        with Session.open(target, create=True, embedder=EMB) as s:
            options = IndexOptions(embedder=EMB)
            first = s.index(options=options)
            report = s.index(versions=src.export(), options=options, report=first, meta={"note": "copied"})
            assert report is first and len(report.added) == 2
            assert s.meta()["note"] == "copied"
            copied = {(dv.doc, dv.version): dv for dv in s.export()}
    finally:
        src.close()
    again = open_store(db, create=False, read_only=True)
    try:
        original = {(dv.doc, dv.version): dv for dv in again.export()}
    finally:
        again.close()
    assert copied.keys() == original.keys()
    for key, dv in copied.items():
        assert [c.text for c in dv.chunks] == [c.text for c in original[key].chunks]
        assert dv.vectors is not None and original[key].vectors is not None
        assert [list(v) for v in dv.vectors] == [list(v) for v in original[key].vectors]


def test_open_with_a_file_mode_sets_the_store_files_mode(tmp_path) -> None:
    path = tmp_path / "m.db"
    with Session.open(str(path), create=True, file_mode=0o640, embedder=EMB) as s:
        s.index(options=IndexOptions(embedder=EMB))
    assert path.stat().st_mode & 0o777 == 0o640
