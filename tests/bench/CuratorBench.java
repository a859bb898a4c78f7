// The Curator side of scripts/bench.sh: the same modes and output as the
// herdless and Kazoo sides, with Curator 5.4's own recipes
// (InterProcessMutex, LeaderLatch). Run in java's source-file mode:
//   java -cp <curator jars> CuratorBench.java MODE CONNECT PATH ARGS...
// Prints one line: "result key=value ...", times in microseconds.

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

public class CuratorBench {
    static CuratorFramework client(String connect) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 30000, 15000, new RetryOneTime(100));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected");
        }
        return c;
    }

    static String latencies(List<Long> nanos) {
        Collections.sort(nanos);
        double median = nanos.get(nanos.size() / 2) / 1000.0;
        double p99 = nanos.get(Math.min(nanos.size() - 1, (int) Math.ceil(nanos.size() * 0.99) - 1)) / 1000.0;
        return String.format("median_us=%.1f p99_us=%.1f", median, p99);
    }

    static void uncontended(String connect, String path, int warmup, int cycles) throws Exception {
        CuratorFramework c = client(connect);
        InterProcessMutex lock = new InterProcessMutex(c, path);
        List<Long> samples = new ArrayList<>();
        long started = 0;
        for (int i = 0; i < warmup + cycles; i++) {
            if (i == warmup) {
                started = System.nanoTime();
            }
            long t = System.nanoTime();
            lock.acquire();
            lock.release();
            if (i >= warmup) {
                samples.add(System.nanoTime() - t);
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.println("result " + latencies(samples) + String.format(" per_s=%.1f", cycles / seconds));
        c.close();
    }

    static void contended(String connect, String path, int sessions, int seconds) throws Exception {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> threads = new ArrayList<>();
        long[] counts = new long[sessions];
        CountDownLatch ready = new CountDownLatch(sessions);
        for (int s = 0; s < sessions; s++) {
            final int me = s;
            Thread t = new Thread(() -> {
                try {
                    CuratorFramework c = client(connect);
                    InterProcessMutex lock = new InterProcessMutex(c, path);
                    ready.countDown();
                    ready.await();
                    while (System.nanoTime() < deadline) {
                        lock.acquire();
                        counts[me]++;
                        lock.release();
                    }
                    c.close();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        long total = 0, min = Long.MAX_VALUE, max = 0;
        for (long n : counts) {
            total += n;
            min = Math.min(min, n);
            max = Math.max(max, n);
        }
        System.out.println(String.format("result per_s=%.1f min=%d max=%d", total / (double) seconds, min, max));
    }

    /** Uncontended election turns: a latch starts, leads, and is closed. */
    static void turns(String connect, String path, int warmup, int cycles) throws Exception {
        CuratorFramework c = client(connect);
        List<Long> samples = new ArrayList<>();
        for (int i = 0; i < warmup + cycles; i++) {
            long t = System.nanoTime();
            LeaderLatch l = new LeaderLatch(c, path);
            l.start();
            l.await();
            l.close();
            if (i >= warmup) {
                samples.add(System.nanoTime() - t);
            }
        }
        System.out.println("result " + latencies(samples));
        c.close();
    }

    /**
     * n contenders, spread over `sessions` sessions, wait on one lock behind a
     * holder; once all wait, the holder releases, and each acquires and
     * releases once in turn: the time until every one acquired.
     */
    static void waiters(String connect, String path, int n, int sessions) throws Exception {
        CuratorFramework holderClient = client(connect);
        InterProcessMutex holder = new InterProcessMutex(holderClient, path);
        holder.acquire();
        CuratorFramework[] clients = new CuratorFramework[sessions];
        for (int s = 0; s < sessions; s++) {
            clients[s] = client(connect);
        }
        long[] acquiredAt = new long[n];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int me = i;
            Thread t = new Thread(() -> {
                try {
                    InterProcessMutex m = new InterProcessMutex(clients[me % sessions], path);
                    m.acquire();
                    acquiredAt[me] = System.nanoTime();
                    m.release();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.start();
            threads.add(t);
        }
        while (holderClient.getChildren().forPath(path).size() < n + 1) {
            Thread.sleep(5);
        }
        Thread.sleep(10);
        long t0 = System.nanoTime();
        holder.release();
        for (Thread t : threads) {
            t.join();
        }
        long last = 0;
        for (long at : acquiredAt) {
            last = Math.max(last, at);
        }
        System.out.println(String.format("result all_ms=%.1f", (last - t0) / 1e6));
        for (CuratorFramework c : clients) {
            c.close();
        }
        holderClient.close();
    }

    /** A latch that records when it is told it leads. */
    static LeaderLatch latch(CuratorFramework c, String path, AtomicLong ledAt, CountDownLatch[] leads) throws Exception {
        LeaderLatch l = new LeaderLatch(c, path);
        l.addListener(new LeaderLatchListener() {
            public void isLeader() {
                ledAt.set(System.nanoTime());
                leads[0].countDown();
            }
            public void notLeader() {}
        });
        l.start();
        return l;
    }

    /** Two candidates; the leader resigns (or its session closes, for failover) and the time until the other leads is one sample. */
    static void handoff(String connect, String path, int rounds, boolean failover) throws Exception {
        List<Long> samples = new ArrayList<>();
        CuratorFramework[] clients = { client(connect), client(connect) };
        AtomicLong[] ledAt = { new AtomicLong(), new AtomicLong() };
        CountDownLatch[][] leads = { { new CountDownLatch(1) }, { new CountDownLatch(1) } };
        LeaderLatch[] latches = new LeaderLatch[2];
        latches[0] = latch(clients[0], path, ledAt[0], leads[0]);
        leads[0][0].await();
        int leader = 0;
        for (int r = 0; r < rounds; r++) {
            int next = 1 - leader;
            leads[next][0] = new CountDownLatch(1);
            latches[next] = latch(clients[next], path, ledAt[next], leads[next]);
            // Wait until the next candidate is in line behind the leader.
            while (clients[next].getChildren().forPath(path).size() < 2) {
                Thread.sleep(1);
            }
            // A moment for it to set its watches, as in every client's program.
            Thread.sleep(10);
            long t0 = System.nanoTime();
            if (failover) {
                clients[leader].close();
            } else {
                latches[leader].close();
            }
            leads[next][0].await();
            samples.add(ledAt[next].get() - t0);
            if (failover) {
                clients[leader] = client(connect);
            }
            leader = next;
        }
        latches[leader].close();
        System.out.println("result " + latencies(samples));
        clients[0].close();
        clients[1].close();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0], connect = args[1], path = args[2];
        switch (mode) {
            case "uncontended" -> uncontended(connect, path, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "contended" -> contended(connect, path, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "turns" -> turns(connect, path, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "waiters" -> waiters(connect, path, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "handoff" -> handoff(connect, path, Integer.parseInt(args[3]), false);
            case "failover" -> handoff(connect, path, Integer.parseInt(args[3]), true);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
        System.exit(0);
    }
}
