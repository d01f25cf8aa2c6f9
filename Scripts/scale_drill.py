#!/usr/bin/env python3
"""Scale-out drill: three receiptd instances on one PostgreSQL database behind HAProxy, SIGKILLed.

Starts a throwaway PostgreSQL cluster (Debian's `postgresql`, as the `postgres` user when run as
root) and a streaming replica of it (`pg_basebackup` + a hot standby) the instances read from
(`RECEIPTD_DATABASE_REPLICA_URLS`), killed a third of the way through and started again two
thirds of the way (the reads' checks below hold throughout), `receiptd simulate`, a slow `receiptd webhook-sink`, three `receiptd serve` on the
cluster's database and HAProxy in front (round robin, `/readyz` checks, a request whose instance
died before answering retried on another). Receipt posters and V1 notification senders go through
HAProxy while one instance after another is killed with SIGKILL and started again, KILLS times.
Every request answered 200 is an acknowledged write. Some users get a second receipt (a
non-consumable) after their first has been read, so every instance holds their document in its
cache when it changes. Meanwhile entitlement readers take each newly acknowledged receipt and,
100 ms after its answer, read the subscriber from every instance directly (two of them are not
the one that wrote it) and through HAProxy: each read must show the purchase active and at least
the version the write answered with (an instance being restarted refuses the connection and is
not counted). At the end every acknowledged receipt must
read as active from each of the three instances directly, with the same document version from
each (their caches agree) and the same version and events for every user (the same receipt for
each: a write applied twice would show), every acknowledged notification must be stored once, and once the outbox has
drained every stored event must have reached the sink at least once, each subscriber's in version
order, every delivery `delivered` (the crash harness's webhook checks), and the replica must have served
reads. Prints the figures; exits 1 on any loss. Loopback only; stops by itself.

Usage: Scripts/scale_drill.py BIN_DIR [KILLS=12] [SEED]
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crash_harness as harness  # noqa: E402  (request, b64, message ids and the webhook checks)

BIN = sys.argv[1]
KILLS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROXY, PG_PORT, SIM_PORT, SINK_PORT, REPLICA_PORT = 18300, 18310, 18311, 18312, 18313
PORTS = [18301, 18302, 18303]
SECRET = "drill-shared-" + os.urandom(6).hex()
HOOK_SECRET = "drill-hook-" + os.urandom(12).hex()
POSTERS, NOTIFIERS, READERS = 6, 2, 3
FRESH_AFTER = 0.1  # seconds after an acknowledged write by which every instance must read it
AS_POSTGRES = os.getuid() == 0


def run_pg(tool, *args):
    versions = sorted(int(v) for v in os.listdir("/usr/lib/postgresql") if v.isdigit())
    command = [f"/usr/lib/postgresql/{versions[-1]}/bin/{tool}", *args]
    if AS_POSTGRES:
        command = ["runuser", "-u", "postgres", "--"] + command
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Psql:
    """Just enough of a DB-API connection for the crash harness's webhook checks, through psql."""

    def __init__(self, url):
        self.url = url

    def execute(self, sql):
        out = subprocess.run(["psql", self.url, "-At", "-F", "\t", "-c", sql], check=True, capture_output=True,
                             text=True).stdout
        rows = [tuple(line.split("\t")) for line in out.splitlines() if line]
        return Rows(rows)


class Rows(list):
    def fetchall(self):
        return list(self)

    def fetchone(self):
        return self[0] if self else None


def main():
    if not os.path.isdir("/usr/lib/postgresql") or not shutil.which("haproxy"):
        raise SystemExit("the drill needs Debian's postgresql and haproxy")
    rng = random.Random(SEED)
    work = tempfile.mkdtemp(prefix="receiptd-drill-")
    os.chmod(work, 0o777)
    run_pg("initdb", "-D", f"{work}/pg", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
    run_pg("pg_ctl", "-D", f"{work}/pg", "-l", f"{work}/pg.log", "-w", "-o",
           f"-p {PG_PORT} -k {work} -c listen_addresses=127.0.0.1 -c max_connections=100", "start")
    url = f"postgresql://postgres@127.0.0.1:{PG_PORT}/receiptd"
    subprocess.run(["psql", f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres", "-qc", "CREATE DATABASE receiptd"],
                   check=True)
    run_pg("pg_basebackup", "-D", f"{work}/replica", "-R", "-X", "stream", "--no-sync", "--checkpoint=fast", "-h", "127.0.0.1", "-p",
           str(PG_PORT), "-U", "postgres")

    def start_replica():
        run_pg("pg_ctl", "-D", f"{work}/replica", "-l", f"{work}/replica.log", "-w", "-o",
               f"-p {REPLICA_PORT} -k {work} -c listen_addresses=127.0.0.1 -c hot_standby=on", "start")

    def kill_replica():
        run_pg("pg_ctl", "-D", f"{work}/replica", "-m", "immediate", "-w", "stop")

    start_replica()
    replica_url = f"postgresql://postgres@127.0.0.1:{REPLICA_PORT}/receiptd"
    processes = []
    sim = subprocess.Popen([f"{BIN}/receiptd", "simulate", "--port", str(SIM_PORT)],
                           env=dict(os.environ, RECEIPTD_APP_STORE_SHARED_SECRET=SECRET),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sink = subprocess.Popen([f"{BIN}/receiptd", "webhook-sink", "--port", str(SINK_PORT), "--secret", HOOK_SECRET,
                             "--delay-ms", "20"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    processes += [sim, sink]
    arrivals = []
    sink_reader = threading.Thread(target=lambda: [arrivals.append(json.loads(line)) for line in sink.stdout])
    sink_reader.start()
    with open(f"{work}/haproxy.cfg", "w") as f:
        f.write(f"""global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    retries 3
    option redispatch
    retry-on conn-failure empty-response
frontend drill
    bind 127.0.0.1:{PROXY}
    default_backend receiptd
backend receiptd
    balance roundrobin
    option httpchk GET /readyz
    default-server inter 200ms fall 1 rise 1
""" + "".join(f"    server r{i} 127.0.0.1:{p} check\n" for i, p in enumerate(PORTS)))
    proxy = subprocess.Popen(["haproxy", "-f", f"{work}/haproxy.cfg"], stdout=subprocess.DEVNULL,
                             stderr=open(f"{work}/haproxy.log", "w"))
    processes.append(proxy)
    base_env = dict(os.environ, RECEIPTD_ENVIRONMENT="production", RECEIPTD_LOG_LEVEL="warning",
                    RECEIPTD_HTTP_ACCESS_LOG="false", RECEIPTD_DATABASE_URL=url, RECEIPTD_DATABASE_CONNECTIONS="3",
                    RECEIPTD_DATABASE_REPLICA_URLS=replica_url,
                    RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY=f"{ROOT}/Migrations", RECEIPTD_APP_STORE_ALLOW_HTTP="true",
                    RECEIPTD_APP_STORE_PRODUCTION_URL=f"http://127.0.0.1:{SIM_PORT}/production/verifyReceipt",
                    RECEIPTD_APP_STORE_SANDBOX_URL=f"http://127.0.0.1:{SIM_PORT}/sandbox/verifyReceipt",
                    RECEIPTD_APP_STORE_SHARED_SECRET=SECRET, RECEIPTD_API_PUBLIC_KEYS="crash-public",
                    RECEIPTD_API_SECRET_KEYS="crash-secret", RECEIPTD_LIMITS_RECEIPTS_PER_KEY_PER_SECOND="0",
                    RECEIPTD_LIMITS_RECEIPTS_PER_ADDRESS_PER_SECOND="0", RECEIPTD_REFRESHER_ENABLED="false",
                    RECEIPTD_WEBHOOKS_ENDPOINTS="harness", RECEIPTD_WEBHOOKS_ALLOW_HTTP="true",
                    RECEIPTD_WEBHOOKS_HARNESS_URL=f"http://127.0.0.1:{SINK_PORT}/hooks",
                    RECEIPTD_WEBHOOKS_HARNESS_SECRET=HOOK_SECRET, RECEIPTD_WEBHOOKS_HARNESS_TIMEOUT_MS="2000",
                    RECEIPTD_WEBHOOKS_LEASE_MS="1000", RECEIPTD_WEBHOOKS_POLL_MS="100",
                    RECEIPTD_WEBHOOKS_RETRY_FIRST_DELAY_MS="200", RECEIPTD_WEBHOOKS_RETRY_MAX_DELAY_MS="1000")
    log = open(f"{work}/receiptd.log", "w")
    instances = {}

    def start(port):
        p = subprocess.Popen([f"{BIN}/receiptd", "serve", "--config-dir", f"{ROOT}/Config"],
                             env=dict(base_env, RECEIPTD_HTTP_PORT=str(port)), stdout=log, stderr=subprocess.STDOUT)
        for _ in range(400):
            try:
                if harness.request("GET", port, "/readyz", timeout=1)[0] == 200:
                    instances[port] = p
                    return
            except OSError:
                pass
            if p.poll() is not None:
                raise SystemExit(f"receiptd exited with {p.returncode} on start; see {work}/receiptd.log")
            time.sleep(0.05)
        raise SystemExit("receiptd did not become ready")

    acked_receipts, acked_notifications = [], []
    sent = {"receipts": 0, "notifications": 0, "errors": 0, "refused": 0}
    lock = threading.Lock()
    to_read = []  # (user, acknowledged at, version answered): newest last
    freshness = {"checked": 0, "changed": 0, "reads": 0, "late": [], "stale": []}
    read_once = []  # users whose first receipt every instance has read: ready for a second
    posts = {}  # user: [acknowledged?] per receipt posted
    counter = [0]

    def next_id():
        with lock:
            counter[0] += 1
            return counter[0]

    def poster(stop):
        while not stop.is_set():
            n = next_id()
            with lock:
                second = read_once.pop(0) if read_once and n % 2 == 0 else None
            user = second or f"d{n}"
            scenario = "non_consumable" if second else "active_monthly"
            body = {"app_user_id": user, "receipt_data": harness.b64(f"{scenario}:{user}")}
            try:
                status, data = harness.request("POST", PROXY, "/v1/receipts", body, "crash-public")
            except OSError:
                status = None
            with lock:
                sent["receipts"] += 1
                posts.setdefault(user, []).append(status == 200)
                if status == 200:
                    if not second:
                        acked_receipts.append(user)
                    to_read.append((user, time.monotonic(), json.loads(data)["version"]))
                elif status is None:
                    sent["errors"] += 1
                else:
                    sent["refused"] += 1

    def notifier(stop):
        while not stop.is_set():
            tag = f"m{next_id()}"
            answer = harness.request("POST", SIM_PORT, "/production/verifyReceipt",
                                     {"receipt-data": harness.b64(f"active_monthly:{tag}"), "password": SECRET})[1]
            unified = json.loads(answer)
            original = unified["latest_receipt_info"][0]["original_transaction_id"]
            body = {"notification_type": "DID_RENEW", "password": SECRET, "bid": "com.example.app", "environment": "PROD",
                    "original_transaction_id": original, "unified_receipt": unified}
            try:
                status, _ = harness.request("POST", PROXY, "/v1/notifications/apple", body)
            except OSError:
                status = None
            with lock:
                sent["notifications"] += 1
                if status == 200:
                    acked_notifications.append(original)
                elif status is None:
                    sent["errors"] += 1
                else:
                    sent["refused"] += 1

    def reader(stop):
        """Takes the newest acknowledged receipt, a second one first (older ones are dropped when
        the readers fall behind), and reads it FRESH_AFTER seconds after its answer from every
        instance and HAProxy."""
        while not stop.is_set():
            with lock:  # the newest change to a document read before first, else the newest write
                changes = [i for i, (_, _, version) in enumerate(to_read) if version > 1]
                item = to_read.pop(changes[-1] if changes else -1) if to_read else None
                if len(to_read) > 50:
                    del to_read[:-50]
            if item is None:
                time.sleep(0.01)
                continue
            user, acked, version = item
            wait = acked + FRESH_AFTER - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            reads = 0
            for port in PORTS + [PROXY]:
                try:
                    status, data = harness.request("GET", port, f"/v1/subscribers/{user}", key="crash-secret",
                                                   timeout=5)
                except OSError:
                    continue  # an instance being killed or started
                if status == 503 and port == PROXY:
                    continue  # HAProxy between instances
                reads += 1
                doc = json.loads(data) if status == 200 else {}
                if not (doc.get("entitlements") or {}).get("premium", {}).get("active") \
                        or doc.get("version", 0) < version:
                    with lock:
                        freshness["stale"].append((user, port, status, doc.get("version"), version))
            with lock:
                freshness["checked"] += 1
                if version > 1:
                    freshness["changed"] += 1
                elif reads == len(PORTS) + 1:
                    read_once.append(user)  # every instance has it cached now
                freshness["reads"] += reads
                late = time.monotonic() - acked
                freshness["late"].append(late)

    try:
        for port in PORTS:
            start(port)
        stop = threading.Event()
        threads = [threading.Thread(target=poster, args=(stop,)) for _ in range(POSTERS)]
        threads += [threading.Thread(target=notifier, args=(stop,)) for _ in range(NOTIFIERS)]
        threads += [threading.Thread(target=reader, args=(stop,)) for _ in range(READERS)]
        for t in threads:
            t.start()
        started = time.time()
        for k in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.5))
            port = rng.choice(PORTS)
            instances[port].send_signal(signal.SIGKILL)
            instances[port].wait()
            start(port)
            print(f"kill {k + 1:2}/{KILLS}: instance :{port}; acknowledged so far {len(acked_receipts)} receipts, "
                  f"{len(acked_notifications)} notifications", flush=True)
            if k == KILLS // 3:
                kill_replica()
                print("the replica killed", flush=True)
            elif k == 2 * KILLS // 3:
                start_replica()
                print("the replica started again", flush=True)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.time() - started

        lost, disagree, versions_of = [], [], {}
        for user in acked_receipts:
            versions = set()
            for port in PORTS:
                status, data = harness.request("GET", port, f"/v1/subscribers/{user}", key="crash-secret")
                doc = json.loads(data) if status == 200 else {}
                if not (doc.get("entitlements") or {}).get("premium", {}).get("active"):
                    lost.append((user, port))
                versions.add(doc.get("version"))
            if len(versions) > 1:
                disagree.append((user, versions))
            versions_of[user] = min(versions, key=str)
        drained = False
        deadline = time.time() + 120
        while time.time() < deadline and not drained:
            status, data = harness.request("GET", PORTS[0], "/readyz")
            drained = status == 200 and json.loads(data).get("webhooks", {}).get("harness", {}).get("pending") == 0
            time.sleep(0.2)
        conn = Psql(url)
        stored = {}
        for (original,) in conn.execute("SELECT original_transaction_id FROM notifications"):
            stored[original] = stored.get(original, 0) + 1
        lost_notifications = [o for o in acked_notifications if o not in stored]
        # Applied twice: a notification stored more than once, or a user whose receipts (each
        # acknowledged) left another version or another number of events than the others with as
        # many receipts.
        twice = [(o, n) for o, n in stored.items() if n > 1]
        events = {user: int(n) for user, n in conn.execute(
            "SELECT app_user_id, count(*) FROM events WHERE app_user_id LIKE 'd%' GROUP BY app_user_id")}
        shapes = {}
        for user in acked_receipts:
            if all(posts[user]):
                shapes.setdefault(len(posts[user]), {}).setdefault((versions_of.get(user), events.get(user)), []) \
                    .append(user)
        for receipts, by_shape in shapes.items():
            if len(by_shape) > 1:
                twice += [(receipts, shape, users[:3]) for shape, users in by_shape.items()]
        webhook_problems = harness.check_webhooks(conn, arrivals, acked_receipts, drained)
        routed = {"replica": 0, "primary": 0}  # reads a replica may serve, since each instance last started
        for port in PORTS:
            for line in harness.request("GET", port, "/metrics", key="crash-secret")[1].decode().splitlines():
                for to in routed:
                    if line.startswith(f'database_replica_reads{{to="{to}"}}'):
                        routed[to] += int(float(line.split()[-1]))
        for p in instances.values():
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
    finally:
        for p in list(instances.values()) + processes:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
        sink_reader.join()
        for data in ("replica", "pg"):
            try:
                run_pg("pg_ctl", "-D", f"{work}/{data}", "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                pass  # not running
    print(f"seed {SEED}; {KILLS} SIGKILLs over {elapsed:.1f} s across {len(PORTS)} instances behind HAProxy; "
          f"sent {sent['receipts']} receipts, {sent['notifications']} notifications; {sent['errors']} cut off, "
          f"{sent['refused']} answered with an error")
    print(f"acknowledged: {len(acked_receipts)} receipts, {len(acked_notifications)} notifications")
    print(f"lost acknowledged writes: {len(lost)} receipt reads, {len(lost_notifications)} notifications; "
          f"instances disagreeing on a version: {len(disagree)}; applied twice: {len(twice)}")
    late = sorted(freshness["late"]) or [0]
    print(f"reads {FRESH_AFTER * 1000:.0f} ms after an acknowledged write: {freshness['checked']} writes checked "
          f"({freshness['changed']} of them changing a document every instance had read), "
          f"{freshness['reads']} reads across the instances and HAProxy (median {late[len(late) // 2] * 1000:.0f} ms, "
          f"max {late[-1] * 1000:.0f} ms after the answer), stale: {len(freshness['stale'])}")
    print(f"reads a replica may serve (since each instance's last start): {routed['replica']} served by the replica, "
          f"{routed['primary']} by the primary")
    if lost or lost_notifications or disagree or webhook_problems or twice or freshness["stale"] \
            or freshness["changed"] == 0 or routed["replica"] == 0:
        print(f"FAILED: {lost[:5]} {lost_notifications[:5]} {disagree[:5]} {webhook_problems[:5]} {twice[:5]} "
              f"{freshness['stale'][:5]}; kept {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print("scale drill passed")


if __name__ == "__main__":
    main()
