// A Curator InterProcessMutex contender for the ensemble tests: takes the
// lock at PATH in a loop, holding it for 0 to 5 ms, until SECONDS have
// passed, and appends each entry and exit to JOURNAL (O_APPEND, one write per
// line) as "<unix ms> enter|leave curator", so that the test can put its
// critical sections in one order with the herdless contenders' ones.
//
// Run in source-file mode: java -cp <curator, zookeeper, guava, slf4j jars>
// CuratorLockContender.java CONNECT PATH JOURNAL SECONDS

import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLockContender {
    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], journal = args[2];
        long until = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(8000)
                .connectionTimeoutMs(8000)
                .retryPolicy(new ExponentialBackoffRetry(100, 29, 1000))
                .build();
        client.start();
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        long entries = 0, errors = 0;
        try (FileOutputStream out = new FileOutputStream(journal, true)) {
            while (System.currentTimeMillis() < until) {
                try {
                    // Bounded, so that the run ends on time.
                    if (!mutex.acquire(1, TimeUnit.SECONDS)) {
                        continue;
                    }
                } catch (Exception e) {
                    errors++;
                    System.err.println("acquire: " + e);
                    continue;
                }
                out.write((System.currentTimeMillis() + " enter curator\n").getBytes(StandardCharsets.UTF_8));
                Thread.sleep(ThreadLocalRandom.current().nextInt(0, 6));
                out.write((System.currentTimeMillis() + " leave curator\n").getBytes(StandardCharsets.UTF_8));
                try {
                    mutex.release();
                } catch (Exception e) {
                    errors++;
                    System.err.println("release: " + e);
                }
                entries++;
            }
        }
        System.out.println("entries " + entries + " errors " + errors);
        client.close();
    }
}
