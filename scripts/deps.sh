#!/usr/bin/env bash
# Installs what herdless's tests and benchmark need on a fresh machine and
# is missing: ZooKeeper 3.8 and a JDK from apt (the servers, and Curator
# programs in java's source-file mode), the peers Curator 5.4 and Kazoo 2.8,
# iproute2 for the network-namespace tests. Sourced by scripts/test.sh and
# scripts/bench.sh, which define `step` (a progress line) first.

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
# keytool makes the TLS tests' key stores (security_real); it comes with the JRE.
command -v keytool >/dev/null 2>&1 || missing+=(default-jre-headless)
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || missing+=(python3-kazoo)
[ -f /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
# The Curator contender of ensemble_real runs in java's source-file mode,
# which needs the compiler of a JDK.
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if [ "${#missing[@]}" -gt 0 ]; then
    step "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

