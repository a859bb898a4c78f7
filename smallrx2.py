#!/usr/bin/python3
# an embedded lock with an 80-byte rx fails its acquire with ReplyTooLarge; meanwhile a normal
# embedded device (2 KiB rx) tries to acquire the same lock for 4 s.
import sys, subprocess, time
srv, d = sys.argv[1:3]
p = subprocess.Popen(["/work/attack-b/target/debug/attack-emb", "small-rx", srv, d, "80", "lock"], stdout=subprocess.PIPE, text=True)
for line in p.stdout:
    print(line.rstrip(), flush=True)
    if "attempt 0" in line:
        q = subprocess.run(["/work/attack-b/target/debug/attack-emb", "fleet-lock", srv, d, "2048", "4"], capture_output=True, text=True)
        print("   other device:", q.stdout.strip().replace("\n", "\n   other device: "))
p.wait()
