// A Curator contender for the tests beside Curator's own recipes: takes the
// recipe at PATH in a loop, holding it for 0 to 5 ms, until SECONDS have
// passed, and appends each entry and exit to JOURNAL (O_APPEND, one write per
// line) as "<unix ms> enter|leave <who>", so that the test can put its
// critical sections in one order with the herdless contenders' ones. MODE
// (default mutex) is the recipe: mutex (InterProcessMutex, journalled as
// "curator"), read or write (InterProcessReadWriteLock's sides, as
// "curator-read" and "curator-write"), latch (LeaderLatch, as
// "curator-latch": leading is the critical section).
//
// Run in source-file mode: java -cp <curator, zookeeper, guava, slf4j jars>
// CuratorLockContender.java CONNECT PATH JOURNAL SECONDS [MODE]

import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLockContender {
    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], journal = args[2];
        long until = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000;
        String mode = args.length > 4 ? args[4] : "mutex";
        String who = mode.equals("mutex") ? "curator" : "curator-" + mode;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(8000)
                .connectionTimeoutMs(8000)
                .retryPolicy(new ExponentialBackoffRetry(100, 29, 1000))
                .build();
        client.start();
        InterProcessMutex mutex;
        switch (mode) {
            case "mutex": mutex = new InterProcessMutex(client, path); break;
            case "read": mutex = new InterProcessReadWriteLock(client, path).readLock(); break;
            case "write": mutex = new InterProcessReadWriteLock(client, path).writeLock(); break;
            case "latch": mutex = null; break;
            default: throw new IllegalArgumentException("mode: " + mode);
        }
        long entries = 0, errors = 0;
        LeaderLatch latch = null;
        try (FileOutputStream out = new FileOutputStream(journal, true)) {
            while (System.currentTimeMillis() < until) {
                try {
                    // Bounded, so that the run ends on time.
                    if (mutex != null) {
                        if (!mutex.acquire(1, TimeUnit.SECONDS)) {
                            continue;
                        }
                    } else {
                        if (latch == null) {
                            latch = new LeaderLatch(client, path, who);
                            latch.start();
                        }
                        if (!latch.await(1, TimeUnit.SECONDS)) {
                            continue;
                        }
                    }
                } catch (Exception e) {
                    errors++;
                    System.err.println("acquire: " + e);
                    continue;
                }
                out.write((System.currentTimeMillis() + " enter " + who + "\n").getBytes(StandardCharsets.UTF_8));
                Thread.sleep(ThreadLocalRandom.current().nextInt(0, 6));
                out.write((System.currentTimeMillis() + " leave " + who + "\n").getBytes(StandardCharsets.UTF_8));
                try {
                    if (mutex != null) {
                        mutex.release();
                    } else {
                        // A closed latch cannot start again: the next round
                        // queues with a new one.
                        latch.close();
                        latch = null;
                    }
                } catch (Exception e) {
                    errors++;
                    System.err.println("release: " + e);
                }
                entries++;
            }
        }
        if (latch != null) {
            latch.close();
        }
        System.out.println("entries " + entries + " errors " + errors);
        client.close();
    }
}
