"""A Kazoo Lock contender for the CLI's inspect test: takes the lock at PATH
(waiting behind whoever holds it), prints "acquired", holds until killed.

Usage: python3 kazoo_lock_waiter.py HOSTS PATH
"""
import sys
import time

from kazoo.client import KazooClient

client = KazooClient(hosts=sys.argv[1])
client.start()
lock = client.Lock(sys.argv[2], "kazoo-waiter")
lock.acquire()
print("acquired", flush=True)
while True:
    time.sleep(60)
