"""A throwaway PostgreSQL for the bench scripts: the system's server binaries
(pg_config --bindir), run as `nobody` when the script runs as root, on
127.0.0.1 only, with durability off (the scripts measure clients)."""
import os, shutil, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def as_server_user(cmd):
    if os.geteuid() == 0:
        return ["su", "-s", "/bin/sh", "nobody", "-c", " ".join(cmd)]
    return cmd


class Server:
    def __init__(self, port, cpus=None, settings=()):
        self.port = port
        self.cpus = cpus  # pin the server to these cores (taskset), if set
        self.settings = list(settings)  # more "name=value" server settings
        self.bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        self.work = tempfile.mkdtemp(prefix="txload-bench-")
        os.chmod(self.work, 0o755)
        self.data = os.path.join(self.work, "data")
        self.url = f"postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable"

    def txload(self):
        """Returns $TXLOAD, or a txload built from this checkout."""
        if os.environ.get("TXLOAD"):
            return os.environ["TXLOAD"]
        path = os.path.join(self.work, "txload")
        subprocess.run(["go", "build", "-o", path, "./cmd/txload"], cwd=ROOT, check=True)
        return path

    def __enter__(self):
        if os.geteuid() == 0:
            shutil.chown(self.work, "nobody")
        b = self.bindir
        subprocess.run(as_server_user([f"{b}/initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--no-sync", ">/dev/null"]), check=True)
        opts = (f"-p {self.port} -h 127.0.0.1 -k {self.work} -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=300 -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min")
        opts += "".join(f" -c {kv}" for kv in self.settings)
        try:
            pin = ["taskset", "-c", self.cpus] if self.cpus else []
            subprocess.run(pin + as_server_user([f"{b}/pg_ctl", "-D", self.data, "-l", f"{self.work}/log", "-w", "-o", f"'{opts}'", "start", ">/dev/null"]), check=True)
        except subprocess.CalledProcessError:
            log = open(f"{self.work}/log").read() if os.path.exists(f"{self.work}/log") else ""
            shutil.rmtree(self.work, ignore_errors=True)
            raise SystemExit(f"starting PostgreSQL on port {self.port} failed (is the port taken?):\n{log[-2000:]}")
        return self

    def cpu(self):
        """The server's CPU seconds so far (user + system): the postmaster's
        own, its live processes', and those of the backends it has reaped
        (its cutime + cstime). Read from /proc: no root needed."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            root = int(f.readline())
        tick = os.sysconf("SC_CLK_TCK")
        children = {}
        stats = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ppid = int(fields[1])
            children.setdefault(ppid, []).append(int(pid))
            stats[int(pid)] = [int(x) for x in fields[11:15]]  # utime stime cutime cstime
        total = sum(stats.get(root, [0, 0, 0, 0]))
        for child in children.get(root, []):
            total += sum(stats[child][:2])
        return total / tick

    def __exit__(self, *exc):
        subprocess.run(as_server_user([f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", ">/dev/null"]))
        shutil.rmtree(self.work, ignore_errors=True)
