"""A Kazoo contender for the tests beside Kazoo's own recipes: takes the
recipe at PATH in a loop, holding it for 0 to 5 ms, until SECONDS have
passed, and appends each entry and exit to JOURNAL (O_APPEND, one write per
line) as "<unix ms> enter|leave <who>", so that the test can put its critical
sections in one order with the herdless contenders' ones (which name their
nodes Kazoo's way: Kazoo counts no other). MODE (default lock) is the
recipe: lock (Lock, journalled as "kazoo"), read or write (ReadLock and
WriteLock, as "kazoo-read" and "kazoo-write"), election (Election, as
"kazoo-election": leading is the critical section).

Usage: /usr/bin/python3 kazoo_lock_contender.py CONNECT PATH JOURNAL SECONDS [MODE]
"""
import os
import random
import sys
import time

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

connect, path, journal, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else "lock"
who = "kazoo" if mode == "lock" else f"kazoo-{mode}"
until = time.time() + seconds
# As the Curator contender: an 8 s session, retrying every 0.1 to 1 s.
retry = dict(max_tries=-1, delay=0.1, max_delay=1.0)
client = KazooClient(
    hosts=connect,
    timeout=8.0,
    connection_retry=KazooRetry(**retry),
    command_retry=KazooRetry(**retry),
)
client.start(timeout=30)
if mode == "election":
    # Election.run(func) is `with self.lock: func()`; its lock is taken
    # directly here, so that a round can give up on time.
    lock = client.Election(path, who).lock
else:
    lock = {"lock": client.Lock, "read": client.ReadLock, "write": client.WriteLock}[mode](path, who)
entries = errors = 0
out = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def note(what):
    os.write(out, f"{int(time.time() * 1000)} {what} {who}\n".encode())


while time.time() < until:
    try:
        # Bounded, so that the run ends on time.
        if not lock.acquire(timeout=1):
            continue
    except Exception as e:  # noqa: BLE001 - counted and reported
        errors += 1
        print(f"acquire: {e!r}", file=sys.stderr, flush=True)
        continue
    note("enter")
    time.sleep(random.randint(0, 5) / 1000)
    note("leave")
    try:
        lock.release()
    except Exception as e:  # noqa: BLE001
        errors += 1
        print(f"release: {e!r}", file=sys.stderr, flush=True)
    entries += 1

print(f"entries {entries} errors {errors}", flush=True)
client.stop()
client.close()
