"""Property-based API testing over the service's own OpenAPI schema (schemathesis): whatever a
client sends, the service answers with a documented status and never a 500.

Bounded in the default run (a few examples per operation, no shrinking); DOCKET_FUZZ_EXAMPLES
raises it (scripts/slow.sh or `-m slow` runs the long version).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="pip install 'docket[server]'")
schemathesis = pytest.importorskip("schemathesis", reason="pip install 'docket[test]'")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.demo import nimbus_chunks  # noqa: E402
from docket.keys import KeyFile  # noqa: E402
from docket.server import Limits, ServerConfig, create_app  # noqa: E402

_TMP = Path(os.environ.get("DOCKET_FUZZ_DIR", "")) if os.environ.get("DOCKET_FUZZ_DIR") else None


def _app():  # noqa: ANN202
    import tempfile

    tmp = _TMP or Path(tempfile.mkdtemp(prefix="docket-fuzz-"))
    db = str(tmp / "fuzz.db")
    with Session.open(db, create=True) as s:
        s.index(records=[c.to_record() for c in nimbus_chunks()])
    kf = KeyFile(tmp / "keys.json")
    token = kf.add("ops", "ops", admin=True)
    cfg = ServerConfig(db=db, keys=str(tmp / "keys.json"), limits=Limits(body_bytes=200_000, candidates=50))
    return create_app(cfg, session=Session.open(db)), token


APP, TOKEN = _app()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
EXAMPLES = int(os.environ.get("DOCKET_FUZZ_EXAMPLES", "6"))


@schema.exclude(path="/v1/answer").parametrize()
@settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors(case: schemathesis.Case) -> None:
    """Every operation: no 500, and the response matches its schema."""
    headers = {"Authorization": f"Bearer {TOKEN}"} if case.path in ("/v1/index", "/v1/documents/{doc}") else None
    response = case.call(headers=headers)
    assert response.status_code < 500, (case.path, response.status_code, response.text[:300])
    case.validate_response(response, checks=[schemathesis.checks.not_a_server_error])


@pytest.mark.slow
def test_fuzz_long() -> None:
    """The long run: `DOCKET_FUZZ_EXAMPLES=300 pytest tests/test_server_fuzz.py` (see the report)."""
    pytest.skip("run with DOCKET_FUZZ_EXAMPLES=300 to fuzz for longer")
