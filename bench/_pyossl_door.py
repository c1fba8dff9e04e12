"""The real door process on the pyOpenSSL prototype: ``python -m bench._pyossl_door [GROUP]``.

Same fd contract as ``python -m doors``; before the door starts, the SVID is read from its memfd (the
door reads it again and closes it) and the transport's TlsStream is switched to pyOpenSSL.
"""

from __future__ import annotations

import os
import sys

from bench import _pyossl
from bench._tls import TlsOptions, pyopenssl_context_from_pem
from doors import DoorContract, run_door


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0)


def main(argv: list[str]) -> None:
    contract = DoorContract.from_environ()
    options = TlsOptions(group=argv[0] if argv else "")
    py_ctx = pyopenssl_context_from_pem(_read_all(contract.svid_fd), contract.bundle_pem.encode(), True, options)
    _pyossl.install_context(py_ctx, server_side=True)
    run_door(contract)


if __name__ == "__main__":
    main(sys.argv[1:])
