"""The Kazoo side of scripts/bench.sh: the same modes and output as the
herdless and Curator sides, with Kazoo 2.8's own recipes (Lock, Election).

    python3 kazoo_bench.py MODE CONNECT PATH ARGS...

Prints one line: "result key=value ...", times in microseconds."""

import math
import sys
import threading
import time

from kazoo.client import KazooClient


def client(connect):
    c = KazooClient(hosts=connect, timeout=30.0)
    c.start(timeout=30)
    return c


def latencies(nanos):
    nanos.sort()
    median = nanos[len(nanos) // 2] / 1000.0
    p99 = nanos[min(len(nanos) - 1, math.ceil(len(nanos) * 0.99) - 1)] / 1000.0
    return "median_us=%.1f p99_us=%.1f" % (median, p99)


def uncontended(connect, path, warmup, cycles):
    c = client(connect)
    lock = c.Lock(path, "bench")
    samples = []
    started = 0
    for i in range(warmup + cycles):
        if i == warmup:
            started = time.perf_counter_ns()
        t = time.perf_counter_ns()
        lock.acquire()
        lock.release()
        if i >= warmup:
            samples.append(time.perf_counter_ns() - t)
    seconds = (time.perf_counter_ns() - started) / 1e9
    print("result %s per_s=%.1f" % (latencies(samples), cycles / seconds))
    c.stop()
    c.close()


def contended(connect, path, sessions, seconds):
    counts = [0] * sessions
    clients = [client(connect) for _ in range(sessions)]
    deadline = [0.0]

    def go():
        deadline[0] = time.monotonic() + seconds

    # Every session starts together, once all are connected.
    ready = threading.Barrier(sessions, action=go)

    def run(me):
        lock = clients[me].Lock(path, "bench-%d" % me)
        ready.wait()
        while time.monotonic() < deadline[0]:
            lock.acquire()
            counts[me] += 1
            lock.release()

    threads = [threading.Thread(target=run, args=(s,)) for s in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.stop()
        c.close()
    print("result per_s=%.1f min=%d max=%d" % (sum(counts) / seconds, min(counts), max(counts)))


def turns(connect, path, warmup, cycles):
    """Uncontended election turns: run an election whose function returns
    at once (Kazoo's Election resigns when it returns)."""
    c = client(connect)
    election = c.Election(path, "bench")
    samples = []
    for i in range(warmup + cycles):
        t = time.perf_counter_ns()
        election.run(lambda: None)
        if i >= warmup:
            samples.append(time.perf_counter_ns() - t)
    print("result " + latencies(samples))
    c.stop()
    c.close()


def waiters(connect, path, n, sessions):
    """n contenders, spread over `sessions` sessions, wait on one lock behind
    a holder; once all wait, the holder releases, and each acquires and
    releases once in turn: the time until every one acquired."""
    holder_client = client(connect)
    holder = holder_client.Lock(path, "holder")
    holder.acquire()
    clients = [client(connect) for _ in range(sessions)]
    acquired_at = [0] * n

    def run(me):
        lock = clients[me % sessions].Lock(path, "waiter-%d" % me)
        lock.acquire()
        acquired_at[me] = time.perf_counter_ns()
        lock.release()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    while len(holder_client.get_children(path)) < n + 1:
        time.sleep(0.005)
    time.sleep(0.010)
    t0 = time.perf_counter_ns()
    holder.release()
    for t in threads:
        t.join()
    print("result all_ms=%.1f" % ((max(acquired_at) - t0) / 1e6))
    for c in clients + [holder_client]:
        c.stop()
        c.close()


def handoff(connect, path, rounds, failover):
    """Two candidates; the leader resigns (its function returns) or, for
    failover, its session closes; the time until the other leads is one
    sample."""
    samples = []
    clients = [client(connect), client(connect)]
    led = [threading.Event(), threading.Event()]
    led_at = [0, 0]
    resign = [threading.Event(), threading.Event()]

    def campaign(me):
        def lead():
            led_at[me] = time.perf_counter_ns()
            led[me].set()
            resign[me].wait()
        try:
            clients[me].Election(path, "bench-%d" % me).run(lead)
        except Exception:
            pass  # the session was closed under it (failover)

    def start(me):
        led[me].clear()
        resign[me].clear()
        t = threading.Thread(target=campaign, args=(me,), daemon=True)
        t.start()
        return t

    start(0)
    led[0].wait()
    leader = 0
    for _ in range(rounds):
        nxt = 1 - leader
        start(nxt)
        while len(clients[nxt].get_children(path)) < 2:
            time.sleep(0.001)
        # A moment for it to set its watches, as in every client's program.
        time.sleep(0.010)
        t0 = time.perf_counter_ns()
        if failover:
            clients[leader].stop()
            clients[leader].close()
        else:
            resign[leader].set()
        led[nxt].wait()
        samples.append(led_at[nxt] - t0)
        if failover:
            clients[leader] = client(connect)
        leader = nxt
    resign[leader].set()
    print("result " + latencies(samples))
    for c in clients:
        c.stop()
        c.close()


def main():
    mode, connect, path = sys.argv[1], sys.argv[2], sys.argv[3]
    args = [int(a) for a in sys.argv[4:]]
    if mode == "uncontended":
        uncontended(connect, path, args[0], args[1])
    elif mode == "contended":
        contended(connect, path, args[0], args[1])
    elif mode == "turns":
        turns(connect, path, args[0], args[1])
    elif mode == "waiters":
        waiters(connect, path, args[0], args[1])
    elif mode == "handoff":
        handoff(connect, path, args[0], False)
    elif mode == "failover":
        handoff(connect, path, args[0], True)
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
