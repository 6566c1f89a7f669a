"""A server's answer is untrusted input: parsed with the same bounds as every file we read."""

import pytest

from dflash_compat.liveprobe.http import Response, ServerError


def _answer(body: bytes, status: int = 200) -> Response:
    return Response(status=status, content_type="application/json", body=body, url="http://s/v1", seconds=0.0)


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"x": ' + b"9" * 400 + b"}", b"\xff{"])
def test_a_hostile_answer_is_one_server_error(body):
    with pytest.raises(ServerError, match="the answer is not JSON"):
        _answer(body).json()


def test_a_plain_answer_parses():
    assert _answer(b'{"choices": [{"text": "hi"}]}').json() == {"choices": [{"text": "hi"}]}
