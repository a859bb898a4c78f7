// A Curator InterProcessMutex contender for the CLI's inspect test: takes
// the lock at PATH (waiting behind whoever holds it), prints "acquired",
// and holds until killed.
//
// Run in source-file mode: java -cp <curator, zookeeper, guava, slf4j jars>
// CuratorMutexWaiter.java CONNECT PATH

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorMutexWaiter {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                args[0], 8000, 8000, new ExponentialBackoffRetry(100, 10));
        client.start();
        InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
        mutex.acquire();
        System.out.println("acquired");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
