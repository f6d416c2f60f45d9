"""The web workers serve their keep-alive connections in turn (gunicorn.conf.py's
post_request): after each response the connection's greenlet yields, so another connection
whose request is ready runs before this one reads its next. Checked in a fresh interpreter,
where gevent's hub is the program's own."""

import subprocess
import sys

from tests.processes import ROOT

PROGRAM = """
import runpy
import gevent

hooks = runpy.run_path('gunicorn.conf.py')
served = []
other = gevent.spawn(served.append, 'other connection')
hooks['post_request'](None, None, {}, None)
print(served)
other.join()
"""


def test_a_connection_yields_to_the_worker_s_other_connections_after_each_response():
    result = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['other connection']"
