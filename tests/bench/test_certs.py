"""bench._certs: every key type's chain passes both libraries' strict verification in a real handshake."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import _inproc
from bench._certs import KEY_TYPES, write_bench_pki
from bench._tls import TlsOptions


@pytest.mark.parametrize("key_type", KEY_TYPES)
def test_bench_chain_handshakes_on_both_libraries(tmp_path: Path, key_type: str) -> None:
    files = write_bench_pki(tmp_path, ("fs", "app"), key_type)
    assert _inproc.stdlib_cpu_ms(files["fs"], files["app"], TlsOptions(), 1) > 0
    assert _inproc.pyopenssl_cpu_ms(files["fs"], files["app"], TlsOptions(), 1) > 0


def test_unknown_key_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown key type"):
        write_bench_pki(tmp_path, ("fs",), "dsa")
