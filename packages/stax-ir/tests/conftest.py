from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def capture_doc_path() -> Path:
    return FIXTURES / "example_1_1.capture.v0.1.0.json"
