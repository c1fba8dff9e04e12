"""spawn's pure helpers: wait statuses in words, and the single-thread guard the launcher checks before fork."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from launcher.lifecycle.spawn import describe_exit, exit_code_of, single_threaded
from pki.vocabulary import EXIT_EXEC_FAILED


def test_exit_codes_follow_the_shell_convention_and_name_confinement_steps() -> None:
    assert exit_code_of(7 << 8) == 7 and exit_code_of(9) == 128 + 9
    assert describe_exit("app", 9) == "app was killed by signal 9"
    assert "could not be executed" in describe_exit("app", EXIT_EXEC_FAILED << 8)
    assert "confinement failed at step 'landlock'" in describe_exit("fs", 207 << 8)


def test_a_running_thread_makes_fork_unsafe() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not single_threaded()
        assert len(os.listdir("/proc/self/task")) > 1
    finally:
        stop.set()
        thread.join()


def test_import_door_code_loads_only_the_sessions_doors_then_freezes_with_the_collector_as_it_was() -> None:
    code = ("import gc, sys\nfrom launcher.lifecycle.spawn import import_door_code\n"
            "import_door_code(('app', 'fs', 'keys'))\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0, *(f'doors.{m}.server' in sys.modules for m in "
            "('fs', 'keys', 'net', 'shell', 'model')))\n"
            "print('doors.fs._fuse_serve' in sys.modules)\n"
            "gc.disable(); import_door_code(('app', 'net', 'fs'), mount=True)\n"
            "print(gc.isenabled(), 'doors.keys.client' in sys.modules, 'doors.fs._fuse_serve' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True", "False", "False", "False",  # frozen, fs and keys
                                   "False",  # no FUSE front without the mount
                                   "False", "True", "True"]  # the collector as it was; the net door's late import
